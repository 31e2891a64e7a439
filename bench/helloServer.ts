/**
 * The floors of the service benchmarks: a bare fastify on a port, answering GET / with a hello-world and, given a
 * file, GET /body with that file's bytes as JSON (the same bytes as the answer measured beside it, sent the way the
 * service sends its cached answers), with `Content-Encoding: ENCODING` when given (the stored gzip of the
 * directory, directoryStorm.ts).   node dist/bench/helloServer.js PORT [FILE [ENCODING]]
 */
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

const port = Number(process.argv[2]);
const body = process.argv[3] === undefined ? null : readFileSync(process.argv[3]);
const encoding = process.argv[4];
const app = Fastify({ logger: false });
app.get('/', async () => ({ hello: 'world' }));
if (body !== null) {
  app.get('/body', async (_request, reply) => {
    if (encoding !== undefined) reply.header('content-encoding', encoding).header('vary', 'Accept-Encoding');
    return reply.type('application/json; charset=utf-8').send(body);
  });
}
await app.listen({ host: '127.0.0.1', port });
process.stdout.write('ready\n');
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
