import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { DoorAgentError, EXIT_INVALID_CONFIG, InputError, describeFsError } from '../util/errors.js';

/** A configuration is a few kilobytes; a larger file is refused before it is parsed (parsing costs memory). */
const MAX_CONFIG_BYTES = 1024 * 1024;

/** The file's text, refusing one over MAX_CONFIG_BYTES (exit 78) without reading it whole. */
export function readConfigText(path: string): string {
  let text: string;
  try {
    const fd = openSync(path, 'r');
    try {
      const size = fstatSync(fd).size;
      if (size > MAX_CONFIG_BYTES) {
        throw new InputError(
          `${path} is not a door-agent configuration`,
          [{ path: '(file)', message: `${size} bytes; a configuration is at most ${MAX_CONFIG_BYTES} bytes` }],
          EXIT_INVALID_CONFIG,
        );
      }
      const buffer = Buffer.alloc(size);
      let read = 0;
      while (read < size) {
        const n = readSync(fd, buffer, read, size - read, read);
        if (n === 0) break;
        read += n;
      }
      text = buffer.subarray(0, read).toString('utf8');
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    if (err instanceof InputError) throw err;
    throw new DoorAgentError(
      `cannot read configuration ${path}: ${describeFsError(err)}. ` +
        'Pass --config FILE or set DOOR_AGENT_CONFIG; config/door-agent.example.yaml is a documented starting point.',
      { cause: err, exitCode: EXIT_INVALID_CONFIG },
    );
  }
  return text;
}
