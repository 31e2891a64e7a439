import nodemailer from 'nodemailer';
import type { Logger } from 'pino';
import type { SmtpOptions } from './options.js';
import type { ServiceDb as Db } from './database.js';

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
export class Mailer {
  private readonly transport: nodemailer.Transporter | null;
  private sending = false;
  private again = false;

  constructor(
    private readonly db: Db,
    private readonly smtp: SmtpOptions | undefined,
    private readonly logger: Logger,
  ) {
    this.transport = smtp ? nodemailer.createTransport(smtp.url) : null;
  }

  /** Sends what is waiting (when SMTP is configured); failures stay in the outbox for the next try. */
  async flush(): Promise<void> {
    if (!this.transport || !this.smtp) return;
    if (this.sending) {
      this.again = true; // mail queued during a delivery round: one more round afterwards
      return;
    }
    this.sending = true;
    try {
      const waiting = this.db.prepare('SELECT mail_id, recipient, subject, body FROM mail_outbox WHERE sent_at IS NULL ORDER BY mail_id').all() as MailRow[];
      for (const mail of waiting) {
        try {
          await this.transport.sendMail({ from: this.smtp.from, to: mail.recipient, subject: mail.subject, text: mail.body });
          this.db.prepare('UPDATE mail_outbox SET sent_at = ? WHERE mail_id = ?').run(Date.now(), mail.mail_id);
        } catch (err) {
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
