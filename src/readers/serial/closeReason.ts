/** The error serialport passes to 'close' when the device went away (its DisconnectedError carries the flag). */
export type PortCloseError = (Error & { disconnected?: boolean }) | null | undefined;

/**
 * Why a serial port closed under a reader, in words an installer can act on. For a device that reported an error
 * serialport passes on libuv's own text: "bad file descriptor" when the poll saw the line fail (a USB adapter
 * unplugged or reset, a pty's other end closed), which reads like a bug in door-agent rather than a cable to check.
 */
export function portCloseReason(err: PortCloseError): string {
  if (!err) return 'the port closed';
  if (err.disconnected) return `the device went away or reported an error (unplugged, powered off or reset: ${err.message})`;
  return err.message;
}
