// Child process for db.test.ts: opens the embedded database in argv[2], creates a chat, prints its id,
// then appends messages m0, m1, … until it is killed, printing the count of committed ones after each.
import { openDatabase } from '../../src/db/pool.ts';
import { createChat } from '../../src/store/chats.ts';
import { appendMessages } from '../../src/store/messages.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';

const db = await openDatabase({ DATABASE_URL: undefined, DATA_DIR: process.argv[2]! });
const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, title: 'crash', enabledTools: [] });
process.stdout.write(`${chat.id}\n`);
for (let i = 0; ; i++) {
  await appendMessages(db.pool, chat.id, [{ role: 'user', content: `m${i}` }], ADMIN_USER_ID);
  process.stdout.write(`${i + 1}\n`);
}
