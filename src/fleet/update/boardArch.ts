import { execFileSync } from 'node:child_process';

/** Node.js's names of architectures as Debian names them (a 32-bit ARM board runs Raspberry Pi OS's armhf). */
const DEBIAN_ARCH: Readonly<Record<string, string>> = {
  x64: 'amd64',
  arm64: 'arm64',
  arm: 'armhf',
  ia32: 'i386',
  ppc64: 'ppc64el',
  s390x: 's390x',
  riscv64: 'riscv64',
  loong64: 'loong64',
};

/** This board's architecture as Debian names it: dpkg's answer, else Node.js's name translated. */
export function debianArch(): string {
  try {
    const answer = execFileSync('dpkg', ['--print-architecture'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    if (/^[a-z0-9_-]{1,32}$/.test(answer)) return answer;
  } catch {
    // no dpkg (not Debian): Node.js's name
  }
  return DEBIAN_ARCH[process.arch] ?? process.arch;
}

/** The ABI of this Node.js (process.versions.modules): native addons built for another do not load. */
export function nodeAbi(): string {
  return process.versions.modules;
}
