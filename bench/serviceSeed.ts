import { join } from 'node:path';
import { ApiKeys } from '../src/service/apiKeys.js';
import { UserStore } from '../src/service/users.js';
import { openServiceDatabase } from '../src/service/database.js';

/** A reference-service database with `count` Staff users holding a card and a PIN each; returns a DOOR key (the doors' key: PINs in clear). */
export function seedService(dataDir: string, count: number): string {
  const db = openServiceDatabase(join(dataDir, 'service.db'));
  const users = new UserStore(db);
  const now = Date.now();
  db.prepare("INSERT INTO groups (type, name) VALUES ('users', 'Staff')").run();
  const member = db.prepare('INSERT INTO group_members (group_id, member_id) VALUES (1, ?)');
  db.transaction(() => {
    for (let i = 0; i < count; i++) {
      const { user } = users.ensure(`user${i}@example.org`, 'USER', now);
      users.replaceSmartcards(user.email_id, [
        { number: String(1_000_000 + 2 * i), label: 'badge' },
        { number: String(1_000_001 + 2 * i), label: 'PIN' },
      ]);
      member.run(user.email_id);
    }
  })();
  const key = new ApiKeys(db).create('DOOR', 0, now);
  db.close();
  return key;
}
