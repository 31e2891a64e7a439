import { backoffDelay, type BackoffOptions } from '../../util/backoff.js';

/**
 * How often the control panel tries a reader that is not in service, and how it names the secure channel a reader
 * actually has. A reader in service is polled as fast as the line allows; one that does not answer, or answers
 * with another secure channel key, is tried at the slow rates below (docs/hardware.md, "OSDP"): it must not fill
 * the bus, the log or the CPU, and the other readers on the bus keep their turns meanwhile.
 */

/** An offline reader (no answer for offlineAfterMs): the next osdp_ID after 1 s, then 2 s, 4 s, then every 5 s. */
const OFFLINE_RETRY: BackoffOptions = { initialMs: 1000, maxMs: 5000, jitter: 0 };

/**
 * A reader whose secure channel handshake failed (another key, no secure channel): it is supervised in the clear
 * with one osdp_ID every 5 s (so it is still seen going offline), and the handshake is tried again after 10 s,
 * 20 s, 40 s, then every 60 s.
 */
export const SECURE_FAILED_POLL_MS = 5000;
const HANDSHAKE_RETRY: BackoffOptions = { initialMs: 10_000, maxMs: 60_000, jitter: 0 };

/** osdp_LSTAT is asked again (at most once a second) until a tamper and power report has come back. */
export const STATUS_RETRY_MS = 1000;

/**
 * Bytes of one packet more than this apart (ms) are not one packet: the partial one is dropped. 50 ms is 48
 * character times at 9600 baud, and above a USB adapter's latency timer (16 ms by default) with room for a busy
 * event loop.
 */
export const INTER_BYTE_TIMEOUT_MS = 50;

export const offlineRetryDelay = (attempt: number): number => backoffDelay(attempt, OFFLINE_RETRY);
export const handshakeRetryDelay = (failures: number): number => backoffDelay(Math.max(0, failures - 1), HANDSHAKE_RETRY);

/**
 * The secure channel a reader has now: plain (no key configured), pending (the handshake has not finished yet),
 * secure (established), failed (the last handshake failed: another key, or a reader without the secure channel).
 */
export type ChannelState = 'plain' | 'pending' | 'secure' | 'failed';
