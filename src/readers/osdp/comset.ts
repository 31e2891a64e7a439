/**
 * osdp_COMSET (0x6E) and its answer osdp_COM (0x54), pure (SIA OSDP v2.2, 6.13 and 7.13): the address and baud
 * rate a PD is to use. The command goes out at the old settings; the PD answers osdp_COM with the settings it
 * will use (libosdp's PD: the ones asked for), then switches.
 */

/** The rates an OSDP bus runs at here (the standard names 9600 to 230400; 9600 is every PD's default). */
export const OSDP_BAUD_RATES = [9600, 19200, 38400, 57600, 115200, 230400] as const;

/** The highest address a PD may have: 0x7F is the broadcast address, which every PD answers. */
const OSDP_MAX_ADDRESS = 126;

export interface ComSettings {
  address: number;
  baudRate: number;
}

/** osdp_COMSET's data, and osdp_COM's: the address (1 byte), the baud rate (4 bytes, LSB first). */
export function encodeComSettings(settings: ComSettings): Buffer {
  const data = Buffer.alloc(5);
  data[0] = settings.address;
  data.writeUInt32LE(settings.baudRate, 1);
  return data;
}

/** osdp_COM's data; null when it is not the 5 bytes the standard gives it. */
export function decodeComSettings(data: Buffer): ComSettings | null {
  if (data.length !== 5) return null;
  return { address: data[0]!, baudRate: data.readUInt32LE(1) };
}

/**
 * Why `--to` is not an address this reader may be moved to, or null. `taken`: the other readers on the same bus
 * (same device path), by address, named as the operator knows them.
 */
export function newAddressProblem(address: number, current: number, taken: ReadonlyMap<number, string>): string | null {
  if (!Number.isInteger(address) || address < 0 || address > OSDP_MAX_ADDRESS) {
    const broadcast = address === 0x7f ? ' (127, 0x7F, is the broadcast address every reader answers)' : '';
    return `an OSDP address is 0 to ${OSDP_MAX_ADDRESS}${broadcast}`;
  }
  if (address === current) return `the reader is at address ${address} already`;
  const owner = taken.get(address);
  return owner === undefined ? null : `address ${address} on this bus is already ${owner}`;
}

/** Why `--to` is not a baud rate this reader may be set to, or null. */
export function newBaudProblem(baudRate: number, current: number): string | null {
  if (!(OSDP_BAUD_RATES as readonly number[]).includes(baudRate)) return `the baud rate is one of ${OSDP_BAUD_RATES.join(', ')}`;
  return baudRate === current ? `the reader runs at ${baudRate} already` : null;
}
