import type * as z from 'zod';

/**
 * Whether each OSDP reader's traffic is protected. Without scbkFile the bus is plain: anything on the RS-485 pair
 * (a device spliced in behind the reader) can read the cards and PINs and inject its own. `config check` warns;
 * `requireSecureChannel: true` makes it an error, for a site that has decided no reader runs plain.
 */

interface OsdpLike {
  type: string;
  path?: string;
  address?: number;
  scbkFile?: string | undefined;
  installMode?: boolean;
  requireSecureChannel?: boolean;
}

/** requireSecureChannel without a key of its own (no scbkFile, or only install mode's public key) is an error. */
export function checkRequiredSecureChannel(reader: OsdpLike, at: ReadonlyArray<string | number>, ctx: z.RefinementCtx): void {
  if (reader.type !== 'osdp' || !reader.requireSecureChannel) return;
  if (!reader.scbkFile) {
    ctx.addIssue({
      code: 'custom',
      path: [...at, 'scbkFile'],
      message: 'requireSecureChannel is set but there is no scbkFile: the reader would run plain (give it a key: door-agent reader keyset)',
    });
  } else if (reader.installMode) {
    ctx.addIssue({
      code: 'custom',
      path: [...at, 'installMode'],
      message: 'requireSecureChannel is set but installMode uses the public default key SCBK-D: set installMode: false',
    });
  }
}

/** One warning per OSDP reader that runs plain, naming the door and the key that would fix it. */
export function plainOsdpWarnings(doors: ReadonlyArray<{ name: string; reader?: OsdpLike; exitReader?: OsdpLike }>): string[] {
  return doors.flatMap((door, i) => {
    const readers: Array<[string, OsdpLike | undefined]> = [
      ['reader', door.reader],
      ['readers.exit', door.exitReader],
    ];
    return readers.flatMap(([key, r]) => {
      if (r?.type !== 'osdp' || r.scbkFile || r.installMode) return [];
      return [
        `doors[${i}].${key} (${door.name}, OSDP ${r.path} address ${r.address}) is plain: without scbkFile a device on the bus can read and inject cards and PINs; ` +
          'set scbkFile (door-agent reader keyset gives the reader its key), and requireSecureChannel: true to make this an error',
      ];
    });
  });
}
