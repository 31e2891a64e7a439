/**
 * A service for the tap-during-sync benchmark, in its own process: N users through the seed's two calls
 * (GET /multipleusers, GET /user), and 404 for GET /directory, so every sync of the agent is a full one
 * (1 + N requests, all validated and staged) and the syncs follow one another while the taps are timed.
 * Prints "listening", then "list" each time the user list is asked for (a sync starts) and "served" when
 * the last user's detail is served (the agent asks in email_id order: that sync fetched everyone).
 *   node dist/bench/listService.js PORT N
 */
import { createServer } from 'node:http';

const [port, count] = process.argv.slice(2).map(Number) as [number, number];
// Built as one Buffer, piece by piece: 250,000 users are ~35 MB of JSON, more than an array of objects should cost.
const parts: Buffer[] = [Buffer.from('[')];
for (let i = 0; i <= count; i++) {
  const user = { email_id: i + 1, ad_status: 'ACTIVE', groups: [['Staff']], user_tag: 'USER', email: `u${i}@example.org`, name: `User ${i}` };
  parts.push(Buffer.from(`${i === 0 ? '' : ','}${JSON.stringify(user)}`));
}
parts.push(Buffer.from(']'));
const users = Buffer.concat(parts);
parts.length = 0;
createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  res.setHeader('content-type', 'application/json');
  if (url.pathname === '/multipleusers') {
    process.stdout.write('list\n');
    return void res.end(users);
  }
  if (url.pathname === '/user') {
    const id = Number(url.searchParams.get('email_id'));
    // The last user holds the card the benchmark taps (4213578), so it keeps opening whatever sync has finished.
    const card = id === count + 1 ? '4213578' : String(9_000_000 + id);
    if (id === count + 1) process.stdout.write('served\n');
    return void res.end(JSON.stringify({ policies: [], smartcards: [{ number: card, label: 'badge' }] }));
  }
  res.statusCode = 404;
  res.end('{"error":"no such endpoint"}');
}).listen(port, '127.0.0.1', () => process.stdout.write('listening\n'));
