// Test double for the Compute Engine metadata server (169.254.169.254 / metadata.google.internal), which
// hands a VM's service-account token to processes on the VM (cloud.google.com/compute/docs/metadata/
// querying-metadata, .../access-authenticate-workloads). As the real server: every request must carry
// `Metadata-Flavor: Google` (else 403), a request with X-Forwarded-For is refused (it came through a proxy),
// every answer carries `Metadata-Flavor: Google`, a VM without a service account answers 404 under
// service-accounts/default/, and the token comes as {access_token, expires_in, token_type}. Clients find it
// through GCE_METADATA_HOST, as google-auth-library's gcp-metadata does. The tokens it hands out are
// issued by the Compute Engine emulator's token service, so the APIs accept them.
import { createServer } from 'node:http';
import type { Server, ServerResponse } from 'node:http';
import type { GoogleTokens } from './gcpOauth';

export class GcpMetadataServer {
  private server?: Server;
  port = 0;
  /** The VM's service account; undefined: a VM created without one. */
  serviceAccount: string | undefined;
  /** Answer as something that is not Google's metadata server (a proxy, a captive portal): no Metadata-Flavor. */
  impostor = false;
  readonly requests: Array<{ path: string; flavor: string | undefined }> = [];

  constructor(
    private readonly tokens: GoogleTokens,
    readonly projectId: string,
    serviceAccount = '123456789012-compute@developer.gserviceaccount.com',
  ) {
    this.serviceAccount = serviceAccount;
  }

  /** host:port, as GCE_METADATA_HOST takes it. */
  get host(): string {
    return `127.0.0.1:${this.port}`;
  }

  private reply(res: ServerResponse, status: number, type: string, body: string): void {
    res.writeHead(status, {
      'content-type': type,
      'content-length': Buffer.byteLength(body),
      ...(this.impostor ? {} : { 'metadata-flavor': 'Google', server: 'Metadata Server for VM' }),
    });
    res.end(body);
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://metadata.google.internal');
      const flavor = req.headers['metadata-flavor'] === undefined ? undefined : String(req.headers['metadata-flavor']);
      this.requests.push({ path: url.pathname, flavor });
      if (this.impostor) return this.reply(res, 200, 'text/html', '<html>Sign in to the network</html>');
      if (req.headers['x-forwarded-for'] !== undefined)
        return this.reply(
          res,
          403,
          'text/html; charset=UTF-8',
          'Your client does not have permission to get URL from this server. Request with X-Forwarded-For header is not allowed.',
        );
      if (flavor !== 'Google')
        return this.reply(
          res,
          403,
          'text/html; charset=UTF-8',
          `Your client does not have permission to get URL ${url.pathname} from this server. Missing Metadata-Flavor:Google header.`,
        );
      const sa = /^\/computeMetadata\/v1\/instance\/service-accounts\/(default|[^/]+@[^/]+)\/(token|email)$/.exec(url.pathname);
      if (sa) {
        if (!this.serviceAccount || (sa[1] !== 'default' && sa[1] !== this.serviceAccount))
          return this.reply(res, 404, 'text/html; charset=UTF-8', 'Not Found');
        if (sa[2] === 'email') return this.reply(res, 200, 'application/text', this.serviceAccount);
        const token = this.tokens.issue({ kind: 'service-account', email: this.serviceAccount });
        return this.reply(res, 200, 'application/json', JSON.stringify({ access_token: token, expires_in: 3599, token_type: 'Bearer' }));
      }
      if (url.pathname === '/computeMetadata/v1/project/project-id') return this.reply(res, 200, 'application/text', this.projectId);
      if (url.pathname === '/' || url.pathname === '/computeMetadata/v1/') return this.reply(res, 200, 'application/text', 'instance/\nproject/\n');
      return this.reply(res, 404, 'text/html; charset=UTF-8', 'Not Found');
    });
    this.server.keepAliveTimeout = 1;
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    const addr = this.server.address();
    this.port = typeof addr === 'object' && addr ? addr.port : 0;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}
