import { closeSync, fsyncSync, openSync } from 'node:fs';

/** Makes the renames and creations in `dir` durable: a power cut after this keeps them. */
export function fsyncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
