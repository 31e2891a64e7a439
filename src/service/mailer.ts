import nodemailer from 'nodemailer';
import type { Logger } from 'pino';
import type { SmtpOptions } from './options.js';
import type { SqlDb } from './sql/sqlDb.js';

interface MailRow {
  mail_id: number;
  recipient: string;
  subject: string;
  body: string;
}

/**
 * Invitation and guest-link e-mail. Every mail goes to the local outbox first; with `server.smtp` it is sent
 * over SMTP and marked sent, without it stays there for `door-agent service outbox` to list.
 */
/** A mail claimed by a process for this long without being sent is another process's to send. */
const CLAIM_MS = 60_000;

export class Mailer {
  private readonly transport: nodemailer.Transporter | null;
  private sending = false;
  private again = false;

  constructor(
    private readonly db: SqlDb,
    private readonly smtp: SmtpOptions | undefined,
    private readonly logger: Logger,
  ) {
    this.transport = smtp ? nodemailer.createTransport(smtp.url) : null;
  }

  /** Sends what is waiting (when SMTP is configured); failures stay in the outbox for the next try. */
  async flush(): Promise<void> {
    if (!this.transport || !this.smtp) return;
    // Asked inside a transaction (the change that queued the mail): sent once it has committed, never from inside
    // it (the mail is not stored before that, and on PostgreSQL the work may run again).
    if (this.db.inTransaction()) {
      this.db.afterCommit(() => void this.flush().catch((err: unknown) => this.logger.warn({ err }, 'mail delivery failed')));
      return;
    }
    if (this.sending) {
      this.again = true; // mail queued during a delivery round: one more round afterwards
      return;
    }
    this.sending = true;
    try {
      const waiting = await this.db.all<MailRow>('SELECT mail_id, recipient, subject, body FROM mail_outbox WHERE sent_at IS NULL ORDER BY mail_id');
      for (const mail of waiting) {
        // Claimed first: of several service processes flushing at once, one sends each mail. A claim older than
        // CLAIM_MS (its process died while sending) is taken over, so a mail is never lost, at worst sent twice.
        const now = Date.now();
        const claimed = await this.db.run(
          'UPDATE mail_outbox SET claimed_at = ? WHERE mail_id = ? AND sent_at IS NULL AND (claimed_at IS NULL OR claimed_at < ?)',
          [now, mail.mail_id, now - CLAIM_MS],
        );
        if (claimed.changes === 0) continue;
        try {
          await this.transport.sendMail({ from: this.smtp.from, to: mail.recipient, subject: mail.subject, text: mail.body });
          await this.db.run('UPDATE mail_outbox SET sent_at = ? WHERE mail_id = ?', [Date.now(), mail.mail_id]);
        } catch (err) {
          await this.db.run('UPDATE mail_outbox SET claimed_at = NULL WHERE mail_id = ?', [mail.mail_id]).catch(() => undefined);
          this.logger.warn({ err, mail: mail.mail_id }, 'cannot send e-mail; kept in the outbox');
          break;
        }
      }
    } finally {
      this.sending = false;
    }
    if (this.again) {
      this.again = false;
      await this.flush();
    }
  }
}
