// Standalone simulator (`make sim`, or `make run` without keys): prints one JSON line with the base
// URLs once listening, then serves until SIGTERM/SIGINT.
// SIM_TLS_CERT_FILE and SIM_TLS_KEY_FILE (PEM): serve https, HTTP/2 or HTTP/1.1 by ALPN.
// SIM_H2C=1: serve cleartext HTTP/2 only (prior knowledge), for PROVIDER_H2C_ORIGINS.
import { readFileSync } from 'node:fs';
import { startSimulator } from './server.ts';

const port = Number.parseInt(process.env.SIM_PORT ?? '0', 10) || 0;
const host = process.env.SIM_HOST || '127.0.0.1';
const { SIM_TLS_CERT_FILE: certFile, SIM_TLS_KEY_FILE: keyFile } = process.env;
const tls = certFile && keyFile ? { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') } : undefined;
const sim = await startSimulator({ port, host, tls, h2c: process.env.SIM_H2C === '1' });
process.stdout.write(JSON.stringify(sim.urls) + '\n');

let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  sim.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
