import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { issueKey } from '../src/service/apiKeys.js';
import { openServiceDatabase } from '../src/service/database.js';
import { serviceTimestamp } from '../src/service/users.js';

/**
 * A reference-service SQLite database with `count` Staff users holding a card and a PIN each, as UserStore.ensure
 * and replaceSmartcards would write them (straight into the file, one synchronous transaction: 250,000 users in
 * seconds); returns a DOOR key (the doors' key: PINs in clear).
 */
export function seedService(dataDir: string, count: number): string {
  const db = openServiceDatabase(join(dataDir, 'service.db'));
  const now = Date.now();
  const created = serviceTimestamp(now);
  db.prepare("INSERT INTO groups (type, name) VALUES ('users', 'Staff')").run();
  const user = db.prepare("INSERT INTO users (email_id, user_id, email, first_name, username, tag, unique_id, created) VALUES (?, ?, ?, ?, ?, 'USER', ?, ?)");
  const card = db.prepare('INSERT INTO smartcards (email_id, position, number, label) VALUES (?, ?, ?, ?)');
  const member = db.prepare('INSERT INTO group_members (group_id, member_id) VALUES (1, ?)');
  db.transaction(() => {
    for (let i = 0; i < count; i++) {
      const id = i + 1;
      user.run(id, id, `user${i}@example.org`, `user${i}`, `user${i}`, randomUUID(), created);
      card.run(id, 0, String(1_000_000 + 2 * i), 'badge');
      card.run(id, 1, String(1_000_001 + 2 * i), 'PIN');
      member.run(id);
    }
  })();
  const { key, row } = issueKey('DOOR', 0, now);
  db.prepare('INSERT INTO api_keys (key_hash, rank, created_at, expires_at) VALUES (?, ?, ?, ?)').run(row.key_hash, row.rank, row.created_at, row.expires_at);
  db.close();
  return key;
}
