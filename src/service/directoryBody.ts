import type { DirectoryContents, DirectoryPlan } from './directory.js';
import type { GrowingBody } from './growingBody.js';
import type { PinMasking } from './pinMasking.js';

/** Users serialized between two turns of the event loop: some 15 to 30 ms of work at most. */
const BATCH = 1000;
/** The scratch buffer the text is written into; each chunk is then copied out at its exact size. */
const SCRATCH_BYTES = 256 * 1024;

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * UTF-8 bytes written one small string at a time into a scratch buffer and handed on as exact-size chunks: no
 * string longer than one user's JSON is ever made (a batch's text as one string went to V8's large-object space,
 * 200 MB of them waiting for a full collection at 250,000 users).
 */
class ChunkWriter {
  private readonly scratch = Buffer.allocUnsafe(SCRATCH_BYTES);
  private used = 0;

  constructor(private readonly emit: (chunk: Buffer) => void) {}

  write(text: string): void {
    const length = Buffer.byteLength(text);
    if (this.used + length > SCRATCH_BYTES) {
      this.flush();
      if (length > SCRATCH_BYTES) {
        this.emit(Buffer.from(text));
        return;
      }
    }
    this.used += this.scratch.write(text, this.used);
  }

  flush(): void {
    if (this.used === 0) return;
    this.emit(Buffer.from(this.scratch.subarray(0, this.used)));
    this.used = 0;
  }
}

/**
 * The JSON of a GET /directory answer, byte for byte what `JSON.stringify` gives for the answer object
 * `{revision, history, tag, full, restore, users, details, removed, levels, resource_groups}` (`restore` only while
 * a restore awaits acceptance: directoryHistory.ts; fastify's serialization
 * before, so the agents read the same text), written into `sink` a batch of users at a time with a turn of the
 * event loop in between: at 250,000 users the service keeps answering other requests while it builds, and the
 * doors waiting for this answer receive its `users` as they are serialized (the `details`, which come after every
 * user in the text, follow at the end). `pins`: the PINs masked (keys that may not read them). The sink is ended
 * here; a failure is thrown to the caller.
 */
export async function buildDirectoryBody(
  plan: DirectoryPlan,
  contents: DirectoryContents,
  pins: PinMasking | null,
  sink: GrowingBody,
  pause: () => Promise<void> = nextTurn,
): Promise<void> {
  const { revision, history, tag } = plan.version;
  const users = new ChunkWriter((chunk) => sink.push(chunk));
  const detailChunks: Buffer[] = [];
  const details = new ChunkWriter((chunk) => detailChunks.push(chunk));
  const { restore } = contents;
  const head = JSON.stringify({ revision, history, tag, full: plan.full, ...(restore === null ? {} : { restore }) });
  users.write(`${head.slice(0, -1)},"users":[`);
  details.write('],"details":{');
  let first = true;
  for (let i = 0; i < contents.ids.length; i += BATCH) {
    if (i > 0) await pause();
    for (const user of await contents.read(contents.ids.slice(i, i + BATCH))) {
      const comma = first ? '' : ',';
      users.write(`${comma}${JSON.stringify(user.item)}`);
      details.write(`${comma}"${user.emailId}":${JSON.stringify(pins === null ? user.detail : pins.detail(user.detail))}`);
      first = false;
    }
    users.flush(); // what this batch serialized goes to the doors now
  }
  users.flush(); // the head, when there was no user
  const { removed, levels, resource_groups } = contents;
  details.write(`},${JSON.stringify({ removed, levels, resource_groups }).slice(1)}`);
  details.flush();
  for (const chunk of detailChunks) sink.push(chunk);
  sink.end();
}
