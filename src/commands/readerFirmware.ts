import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { MAX_FILE_BYTES } from '../readers/osdp/fileTransfer.js';
import type { ControlReply } from '../control/request.js';
import { DoorAgentError, UsageError, describeFsError } from '../util/errors.js';
import { configPath, loadConfigFor, stringOption, type Command } from './context.js';
import { askDaemon, controlSocketOf, printFinal, requester } from './daemonControl.js';

/** The reader the flags name, as the control socket names readers: `DOOR`, `DOOR:exit`, `entry`, `exit`. */
function readerSpec(reader: string | undefined, door: string | undefined): string {
  if (door === undefined) {
    if (reader === undefined) throw new UsageError('name the reader: --reader NAME (a door name or uuid for its entry reader, DOOR:exit for its exit reader)');
    return reader;
  }
  if (reader !== undefined && reader !== 'entry' && reader !== 'exit') throw new UsageError(`with --door, --reader is entry or exit, not ${reader}`);
  return `${door}:${reader ?? 'entry'}`;
}

/** One progress line from the daemon, as an installer reads it. */
function progressLine(line: Extract<ControlReply, { type: 'progress' }>): string {
  const percent = Math.floor((line.sent * 100) / line.total);
  const delay = line.delayMs > 0 ? `; the reader asks ${line.delayMs} ms between fragments` : '';
  if (line.phase === 'finishing')
    return `  ${percent}%: the reader is processing the file${line.delayMs > 0 ? ` (asked again every ${line.delayMs} ms, as it requests)` : ''}\n`;
  if (line.phase === 'installing') return `  ${percent}%: the reader has the whole file: waiting for it to install it and name its firmware\n`;
  return `  ${percent}% (${line.sent} of ${line.total} bytes)${delay}\n`;
}

/**
 * `door-agent reader firmware --reader NAME FILE [--door NAME] [--expect-version V]`: the running daemon (it holds
 * the serial line) sends FILE to the OSDP reader over osdp_FILETRANSFER and confirms that the reader came back with
 * another firmware (or V). Progress as it goes; exit 0 only when confirmed.
 */
export const command: Command = async (input) => {
  const path = input.positionals[0]!;
  const reader = readerSpec(stringOption(input, 'reader'), stringOption(input, 'door'));
  const expectVersion = stringOption(input, 'expect-version');
  if (expectVersion !== undefined && !/^\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(expectVersion))
    throw new UsageError(`--expect-version is a firmware version as the reader names it (such as 3.5.0), not ${expectVersion}`);
  let file: Buffer;
  try {
    file = readFileSync(path);
  } catch (err) {
    throw new DoorAgentError(`cannot read ${path}: ${describeFsError(err)}`, { cause: err });
  }
  if (file.length === 0 || file.length > MAX_FILE_BYTES)
    throw new DoorAgentError(`${path} has ${file.length} bytes: a reader's firmware file is 1 byte to ${MAX_FILE_BYTES} bytes`);
  const flag = stringOption(input, 'config');
  const config = loadConfigFor(flag, input.ctx);
  const socket = controlSocketOf(config, configPath(flag, input.ctx.env));
  const request = Object.assign(
    {
      action: 'reader-firmware' as const,
      reader,
      size: file.length,
      sha256: createHash('sha256').update(file).digest('hex'),
      name: basename(path),
      user: requester(),
    },
    expectVersion === undefined ? {} : { expectVersion },
  );
  const { stdout } = input.ctx;
  const last = await askDaemon(
    socket,
    config,
    request,
    input,
    (line) => {
      if (line.type === 'info') stdout.write(`${line.message}\n`);
      else if (line.type === 'progress') stdout.write(progressLine(line));
    },
    file,
  );
  return printFinal(last, input.ctx);
};
