// Configuration errors a newcomer meets: one clear message per numeric variable, whatever the bad
// value, and provider_c refused without its base URL (the SDK's default address is not provider_c).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/base/config.ts';

function configError(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.message;
  }
  assert.fail(`accepted ${JSON.stringify(env)}`);
}

describe('numeric variables', () => {
  it('give one message per variable for every kind of bad value', () => {
    for (const bad of ['-1', '0', '1.5', 'ten', '1e3', ' ']) {
      assert.equal(
        configError({ CHAT_MAX_TOOL_ROUNDS: bad }),
        `invalid configuration: CHAT_MAX_TOOL_ROUNDS: must be a whole number from 1 to 10000 (got ${bad})`,
      );
    }
    assert.equal(configError({ CHAT_MAX_TOOL_ROUNDS: '10001' }), 'invalid configuration: CHAT_MAX_TOOL_ROUNDS: must be a whole number from 1 to 10000 (got 10001)');
    assert.equal(configError({ PORT: '-1' }), 'invalid configuration: PORT: must be a whole number from 0 to 65535 (got -1)');
    assert.equal(configError({ PORT: '70000' }), 'invalid configuration: PORT: must be a whole number from 0 to 65535 (got 70000)');
    assert.equal(configError({ MAX_ACTIVE_RUNS: '0' }), 'invalid configuration: MAX_ACTIVE_RUNS: must be a whole number of at least 1 (got 0)');
    assert.equal(configError({ SSE_HEARTBEAT_MS: '-5' }), 'invalid configuration: SSE_HEARTBEAT_MS: must be a whole number from 100 to 2147483647 (got -5)');
  });

  it('refuse a duration longer than a timer can wait, which Node would run after 1 ms instead', () => {
    // e.g. PROVIDER_TIMEOUT_MS of 1000 hours, meant as "no timeout", failed every provider call at once.
    for (const name of ['PROVIDER_TIMEOUT_MS', 'INSTANCE_HEARTBEAT_MS', 'SSE_HEARTBEAT_MS', 'CHAT_CODING_EXEC_TIMEOUT_MS', 'CHAT_SHELL_EXEC_TIMEOUT_MS']) {
      assert.match(configError({ [name]: '3600000000' }), new RegExp(`^invalid configuration: ${name}: must be a whole number from \\d+ to 2147483647 \\(got 3600000000\\)$`));
      assert.equal(loadConfig({ [name]: '2147483647' })[name as 'PROVIDER_TIMEOUT_MS'], 2147483647);
    }
  });

  it('name every bad variable at once, and accept good values and defaults', () => {
    assert.match(configError({ PORT: 'x', CHAT_MAX_TOOL_ROUNDS: '0' }), /PORT: must be .*; CHAT_MAX_TOOL_ROUNDS: must be/);
    const c = loadConfig({ CHAT_MAX_TOOL_ROUNDS: '1', PORT: '0' });
    assert.equal(c.CHAT_MAX_TOOL_ROUNDS, 1);
    assert.equal(c.PORT, 0);
    assert.equal(loadConfig({}).CHAT_MAX_TOOL_ROUNDS, 100);
  });
});

describe('TOOL_TEXT_HOLD_MS and TOOL_TEXT_HOLD_CHARS', () => {
  it('hold text briefly by default, and a bad value names its variable', () => {
    const c = loadConfig({});
    assert.deepEqual([c.TOOL_TEXT_HOLD_MS, c.TOOL_TEXT_HOLD_CHARS], [250, 512]);
    const set = loadConfig({ TOOL_TEXT_HOLD_MS: '0', TOOL_TEXT_HOLD_CHARS: '64' });
    assert.deepEqual([set.TOOL_TEXT_HOLD_MS, set.TOOL_TEXT_HOLD_CHARS], [0, 64]);
    assert.equal(configError({ TOOL_TEXT_HOLD_MS: '-1' }), 'invalid configuration: TOOL_TEXT_HOLD_MS: must be a whole number from 0 to 10000 (got -1)');
    assert.equal(configError({ TOOL_TEXT_HOLD_MS: '20000' }), 'invalid configuration: TOOL_TEXT_HOLD_MS: must be a whole number from 0 to 10000 (got 20000)');
    assert.equal(configError({ TOOL_TEXT_HOLD_CHARS: 'lots' }), 'invalid configuration: TOOL_TEXT_HOLD_CHARS: must be a whole number from 0 to 1000000 (got lots)');
  });
});

describe('PROVIDER_C_BASE_URL', () => {
  it('is required with PROVIDER_C_API_KEY, naming the variable', () => {
    assert.equal(
      configError({ PROVIDER_C_API_KEY: 'k' }),
      'invalid configuration: PROVIDER_C_BASE_URL is required when PROVIDER_C_API_KEY is set (provider_c has no default address)',
    );
    assert.equal(loadConfig({ PROVIDER_C_API_KEY: 'k', PROVIDER_C_BASE_URL: 'https://c.example/v1' }).PROVIDER_C_BASE_URL, 'https://c.example/v1');
    assert.equal(loadConfig({}).PROVIDER_C_API_KEY, undefined, 'neither set: provider_c is simulated or off');
  });
});

describe('PROVIDER_HTTP2', () => {
  it('is on unless set false, and a value that is not a boolean names the variable', () => {
    assert.equal(loadConfig({}).PROVIDER_HTTP2, true);
    assert.equal(loadConfig({ PROVIDER_HTTP2: 'false' }).PROVIDER_HTTP2, false);
    assert.match(configError({ PROVIDER_HTTP2: 'maybe' }), /^invalid configuration: PROVIDER_HTTP2: /);
  });
});

describe('PROVIDER_H2C_ORIGINS', () => {
  it('is empty by default, takes comma-separated http origins, and names a value that is not one', () => {
    assert.deepEqual(loadConfig({}).PROVIDER_H2C_ORIGINS, []);
    assert.deepEqual(loadConfig({ PROVIDER_H2C_ORIGINS: ' http://10.0.0.5:8000/, http://gateway:9000' }).PROVIDER_H2C_ORIGINS, ['http://10.0.0.5:8000', 'http://gateway:9000']);
    for (const bad of ['https://c.example', 'http://c.example/v1', 'gateway:9000']) {
      assert.equal(configError({ PROVIDER_H2C_ORIGINS: bad }), `invalid configuration: PROVIDER_H2C_ORIGINS: must be comma-separated http origins such as http://127.0.0.1:8000 (got ${bad})`);
    }
  });
});

describe('CHAT_ENGINE_B_BASE_URL', () => {
  it('is required with CHAT_WEB_SEARCH_ENGINE=engine_b wherever the simulator cannot stand in, production included', () => {
    const message = 'invalid configuration: CHAT_ENGINE_B_BASE_URL is required when CHAT_WEB_SEARCH_ENGINE=engine_b';
    assert.equal(configError({ CHAT_WEB_SEARCH_ENGINE: 'engine_b', SIMULATE: 'off' }), message);
    // NODE_ENV=production never starts the simulator, whatever SIMULATE says: every web_search failed.
    assert.equal(configError({ CHAT_WEB_SEARCH_ENGINE: 'engine_b', NODE_ENV: 'production' }), message);
    assert.equal(loadConfig({ CHAT_WEB_SEARCH_ENGINE: 'engine_b' }).CHAT_ENGINE_B_BASE_URL, undefined); // simulated
    assert.equal(loadConfig({ CHAT_WEB_SEARCH_ENGINE: 'engine_b', NODE_ENV: 'production', CHAT_ENGINE_B_BASE_URL: 'http://search.internal:8888' }).CHAT_WEB_SEARCH_ENGINE, 'engine_b');
  });
});

describe('provider resilience', () => {
  it('has the published defaults', () => {
    const c = loadConfig({});
    assert.deepEqual(
      [c.PROVIDER_RETRIES, c.PROVIDER_RETRY_BASE_MS, c.PROVIDER_RETRY_MAX_WAIT_MS, c.PROVIDER_RETRY_BUDGET_PERCENT, c.PROVIDER_BREAKER_FAILURES, c.PROVIDER_BREAKER_OPEN_MS, c.PROVIDER_FALLBACKS],
      [2, 250, 10_000, 20, 5, 15_000, {}],
    );
  });

  it('reads PROVIDER_FALLBACKS as each provider\'s next model, and names what is wrong with a bad one', () => {
    const c = loadConfig({ PROVIDER_FALLBACKS: ' provider_a=provider_c/sim-c-large ; provider_c=provider_b/sim-b-large;' });
    assert.deepEqual(c.PROVIDER_FALLBACKS, { provider_a: { provider: 'provider_c', model: 'sim-c-large' }, provider_c: { provider: 'provider_b', model: 'sim-b-large' } });
    for (const bad of ['provider_a=provider_x/m', 'provider_a=provider_a/m', 'provider_a=provider_c', 'provider_a=provider_c/m;provider_a=provider_b/m']) {
      assert.match(configError({ PROVIDER_FALLBACKS: bad }), /^invalid configuration: PROVIDER_FALLBACKS: must be provider=provider\/model pairs joined by ';'/);
    }
  });
});
