import type { Action, LinkReached } from '../actionContext.js';

const link = (watch: LinkReached | undefined) => (watch ? { reached: watch.reached() } : null);

/**
 * `health`: the facts an update checks before it calls a version good (docs/fleet.md, "Signed updates"): each
 * door's relay as it reads beside the level its lock state drives, its readers open, whether the service and the
 * broker were reached since the daemon started, the version running. A read: nothing moves, nothing is audited.
 */
export const health: Action<'health'> = (_request, ctx, reply) => {
  const doors = ctx.doors.map((door) => ({
    name: door.options.name,
    uuid: door.options.uuid,
    lock: door.lockState()?.state ?? null,
    relay: door.relayReading(),
    readers: door.readerConnected(),
  }));
  reply.send({
    type: 'health',
    health: { version: ctx.version, doors, service: link(ctx.links.service), broker: link(ctx.links.broker) },
  });
  reply.finish({ type: 'done', message: `door-agent ${ctx.version}: ${doors.length} door(s)` });
};
