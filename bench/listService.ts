/**
 * A service for the tap-during-sync benchmark, in its own process: N users through the seed's two calls
 * (GET /multipleusers, GET /user), and 404 for GET /directory, so every sync of the agent is a full one
 * (1 + N requests, all validated and staged) and the syncs follow one another while the taps are timed.
 *   node dist/bench/listService.js PORT N
 */
import { createServer } from 'node:http';

const [port, count] = process.argv.slice(2).map(Number) as [number, number];
// The last user holds the card the benchmark taps (4213578), so it keeps opening whatever sync has finished.
const users = JSON.stringify(
  Array.from({ length: count + 1 }, (_, i) => ({ email_id: i + 1, ad_status: 'ACTIVE', groups: [['Staff']], user_tag: 'USER', email: `u${i}@example.org`, name: `User ${i}` })),
);
createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  res.setHeader('content-type', 'application/json');
  if (url.pathname === '/multipleusers') return void res.end(users);
  if (url.pathname === '/user') {
    const id = Number(url.searchParams.get('email_id'));
    const card = id === count + 1 ? '4213578' : String(9_000_000 + id);
    return void res.end(JSON.stringify({ policies: [], smartcards: [{ number: card, label: 'badge' }] }));
  }
  res.statusCode = 404;
  res.end('{"error":"no such endpoint"}');
}).listen(port, '127.0.0.1', () => process.stdout.write('listening\n'));
