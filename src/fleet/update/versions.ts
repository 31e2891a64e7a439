/**
 * Versions as package.json has them (`1.4.2`, `1.5.0-rc.1`), ordered as semver orders them: by the three numbers,
 * then a pre-release before its release, pre-release parts compared one by one (numbers as numbers, below words).
 */
const VERSION = /^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?$/;

/** Negative when `a` is older than `b`, 0 when they are the same version, positive when newer; null when either is not a version. */
export function compareVersions(a: string, b: string): number | null {
  const x = VERSION.exec(a);
  const y = VERSION.exec(b);
  if (!x || !y) return null;
  for (let i = 1; i <= 3; i++) {
    const diff = Number(x[i]) - Number(y[i]);
    if (diff !== 0) return Math.sign(diff);
  }
  const pa = x[4];
  const pb = y[4];
  if (pa === undefined || pb === undefined) return pa === pb ? 0 : pa === undefined ? 1 : -1;
  const partsA = pa.split('.');
  const partsB = pb.split('.');
  for (let i = 0; i < Math.max(partsA.length, partsB.length); i++) {
    const s = partsA[i];
    const t = partsB[i];
    if (s === undefined) return -1;
    if (t === undefined) return 1;
    const sn = /^\d+$/.test(s);
    const tn = /^\d+$/.test(t);
    if (sn && tn && Number(s) !== Number(t)) return Math.sign(Number(s) - Number(t));
    if (sn !== tn) return sn ? -1 : 1;
    if (!sn && s !== t) return s < t ? -1 : 1;
  }
  return 0;
}
