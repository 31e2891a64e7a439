import { createHash, randomBytes } from 'node:crypto';
import type { SqlDb } from '../sql/sqlDb.js';

const digest = (token: string) => createHash('sha256').update(token).digest('hex');

/**
 * The console's mailed sign-in links, in the service's database (console_sign_in_links), so that a link mailed by
 * one service process works on any other: only the SHA-256 of a token is stored. At most one live link per user;
 * each works once, until `ttlMs` after it was made.
 */
export class SignInLinks {
  constructor(
    private readonly db: SqlDb,
    private readonly ttlMs: number,
  ) {}

  /**
   * A new link's token for the user, replacing their link before (which stops working); the links that expired go
   * too. Call it inside the transaction that queues the mail carrying it: on PostgreSQL the work may run again, each
   * run with a new token, and only the committed one is mailed.
   */
  async issue(emailId: number, now: number): Promise<string> {
    const token = randomBytes(32).toString('base64url');
    await this.db.transaction(async () => {
      await this.db.run('DELETE FROM console_sign_in_links WHERE email_id = ? OR expires_at <= ?', [emailId, now]);
      await this.db.run('INSERT INTO console_sign_in_links (token_hash, email_id, expires_at) VALUES (?, ?, ?)', [digest(token), emailId, now + this.ttlMs]);
    });
    return token;
  }

  /**
   * Spends a link: the email_id of its user, or undefined when there is no such link or it expired. One DELETE ...
   * RETURNING: of two requests with the same token, on any processes, exactly one gets the row.
   */
  async redeem(token: string, now: number): Promise<number | undefined> {
    const link = await this.db.get<{ email_id: number; expires_at: number }>(
      'DELETE FROM console_sign_in_links WHERE token_hash = ? RETURNING email_id, expires_at',
      [digest(token)],
    );
    return link && link.expires_at > now ? link.email_id : undefined;
  }
}
