// The baseline of bench/run.mjs: a bare Fastify hello world, in its own process like `serve`.
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.get('/', async () => ({ hello: 'world' }));
await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`listening on http://127.0.0.1:${app.server.address().port}\n`);
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
