import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../helpers/server.ts';
const T0 = Date.now();
describe('x', () => {
  it('a', async () => {
    const t = await startTestServer({});
    console.error('started', Date.now() - T0);
    if (process.env.STOPNOW) t.server.ctx.models.stop();
    await new Promise((r) => setTimeout(r, 500));
    await t.close();
    console.error('closed', Date.now() - T0);
    process.on('exit', () => console.error('exit', Date.now() - T0));
  });
});
