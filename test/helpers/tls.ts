// A self-signed certificate for 127.0.0.1, made with openssl, for the tests and probes that need a
// TLS server (HTTP/2 toward providers negotiates over TLS).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface Certificate {
  key: string;
  cert: string;
  /** Where the PEM files are, when a directory was given (a server that reads files: nginx, the simulator's env). */
  keyFile: string;
  certFile: string;
}

/** Made in `dir` (the files stay) or in a temporary directory (removed; only the PEM text is kept). */
export function selfSignedCertificate(dir?: string): Certificate {
  const into = dir ?? mkdtempSync(path.join(os.tmpdir(), 'css-tls-'));
  try {
    const keyFile = path.join(into, 'key.pem');
    const certFile = path.join(into, 'cert.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', keyFile, '-out', certFile], { stdio: 'ignore' });
    return { key: readFileSync(keyFile, 'utf8'), cert: readFileSync(certFile, 'utf8'), keyFile, certFile };
  } finally {
    if (!dir) rmSync(into, { recursive: true, force: true });
  }
}
