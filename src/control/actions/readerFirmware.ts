import type { TransferProgress } from '../../door/readerFirmware.js';
import type { ActionContext } from '../actionContext.js';
import { findReader } from '../doorNames.js';
import type { Reply } from '../reply.js';
import type { RequestOf } from '../request.js';

/**
 * `reader-firmware {reader, size, sha256, name?, expectVersion?}` and the file's bytes: the file goes to the reader
 * over OSDP (door/readerFirmware.ts: one reader at a time in the daemon), its progress comes back as it goes (at each
 * tenth, and whenever the reader asks for another delay), and the last line says whether the reader came back
 * with the new firmware. A requester that hangs up does not stop the transfer: its end is audited.
 */
export function readerFirmware(request: RequestOf<'reader-firmware'>, file: Buffer, ctx: ActionContext, reply: Reply): void {
  const { door, direction } = findReader(ctx.doors, request.reader);
  const uuid = door.options.uuid;
  const label = `${door.options.name}'s ${direction} reader`;
  const refuse = (reason: string) => {
    ctx.audit.command(uuid, request.user, { action: 'reader-firmware', reader: direction, outcome: 'refused', reason });
    reply.finish({ type: 'error', error: `${label}: ${reason}` });
  };
  const busy = ctx.firmware.busy;
  if (busy !== null) return refuse(`a reader firmware transfer is under way (${busy}): one reader at a time; try again when it is over`);
  let shown: { tenth: number; delayMs: number; phase: string } | null = null;
  const onProgress = (p: TransferProgress) => {
    if (p.phase === 'over') return; // its last line says how it ended
    const tenth = Math.floor((p.sent * 10) / p.total);
    if (shown && shown.tenth === tenth && shown.delayMs === p.delayMs && shown.phase === p.phase) return;
    shown = { tenth, delayMs: p.delayMs, phase: p.phase };
    reply.send({ type: 'progress', phase: p.phase, sent: p.sent, total: p.total, delayMs: p.delayMs });
  };
  reply.onCancel((reason) =>
    reply.finish({
      type: 'error',
      error:
        reason === 'daemon stopping'
          ? `the daemon is stopping: the firmware transfer to ${label} ends unfinished (the reader keeps its firmware)`
          : `${label}: the transfer goes on in the daemon; its end is in the audit log (door-agent events)`,
    }),
  );
  reply.send({
    type: 'info',
    message: `${label}: sending ${request.name ?? 'the file'} (${file.length} bytes). Until it is over the reader is busy (shown offline, it takes no taps); the door's other readers decide as ever.`,
  });
  const by = { origin: 'local', user: request.user };
  const options = Object.assign(
    { by },
    request.name === undefined ? {} : { name: request.name },
    request.expectVersion === undefined ? {} : { expectVersion: request.expectVersion },
  );
  void ctx.firmware.transferFirmware(request.reader, file, onProgress, options).then((result) => {
    if (result.ok) {
      const was = result.previous === null ? '' : ` (it ran ${result.previous})`;
      return reply.finish({ type: 'done', message: `${label} runs firmware ${result.version}${was}: installed and confirmed` });
    }
    if ('refused' in result) return refuse(result.reason);
    const keeps = result.version !== null && !result.reason.includes(result.version) ? `; it runs firmware ${result.version}` : '';
    reply.finish({ type: 'error', error: `${label}: the firmware was not installed: ${result.reason}${keeps}` });
  });
}
