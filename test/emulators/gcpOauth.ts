// Test double for Google's token services, as the Compute Engine emulator's clients meet them:
//  - oauth2.googleapis.com/token: the JWT-bearer grant of a service-account key (RS256 verified against its
//    public key) and the refresh-token grant of an authorized_user file (gcloud auth application-default login);
//  - sts.googleapis.com/v1/token: the RFC 8693 token exchange of workload identity federation (an external
//    subject token for a federated access token), with STS's OAuth-style errors;
//  - iamcredentials.googleapis.com/v1/...:generateAccessToken: impersonation of a service account by a principal
//    holding roles/iam.workloadIdentityUser on it (403 IAM_PERMISSION_DENIED otherwise).
// Every issued token remembers its principal, which the APIs use (OS Login keys a profile by it) and which the
// x-goog-user-project check uses: naming a quota project the principal may not use is 403 USER_PROJECT_DENIED.
import { createVerify, randomBytes } from 'node:crypto';

export type Principal =
  | { readonly kind: 'service-account'; readonly email: string }
  | { readonly kind: 'user'; readonly email: string }
  | { readonly kind: 'federated'; readonly subject: string; readonly pool: string };

export interface OauthAnswer {
  readonly status: number;
  readonly body: unknown;
}

export const STS_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

export class GoogleTokens {
  private readonly issued = new Map<string, Principal>();
  /** authorized_user refresh tokens: refresh token → (client id, user email). */
  readonly refreshTokens = new Map<string, { clientId: string; clientSecret: string; email: string }>();
  /** Workload identity pool providers (audience) → the external subject tokens they accept, with their subject. */
  readonly poolProviders = new Map<string, Map<string, string>>();
  /** Service account email → federated principals allowed to impersonate it (roles/iam.workloadIdentityUser). */
  readonly impersonators = new Map<string, Set<string>>();
  /** Projects each principal may bill quota to (serviceusage.services.use), by principal key. */
  readonly quotaProjects = new Map<string, Set<string>>();
  badAssertions = 0;
  /** Requests to the token services that carried x-goog-user-project (google-auth sends none there). */
  quotaHeaderOnTokenCalls = 0;

  /** tokenUri: the audience a service-account JWT must name (known once the emulator listens). */
  constructor(
    private readonly tokenUri: () => string,
    private readonly serviceAccount: { email: string; publicKeyPem: string },
  ) {}

  static key(p: Principal): string {
    return p.kind === 'federated' ? `principal://iam.googleapis.com/${p.pool}/subject/${p.subject}` : p.email;
  }

  issue(p: Principal): string {
    const token = `ya29.${randomBytes(16).toString('hex')}`;
    this.issued.set(token, p);
    return token;
  }

  principalOf(authorization: string | undefined): Principal | undefined {
    return this.issued.get(String(authorization ?? '').replace(/^Bearer /, ''));
  }

  /** undefined when the principal may bill the quota project it names; else Google's 403 body. */
  userProjectDenied(p: Principal, project: string): OauthAnswer | undefined {
    if (this.quotaProjects.get(GoogleTokens.key(p))?.has(project)) return undefined;
    const message = `Caller does not have required permission to use project ${project}. Grant the caller the roles/serviceusage.serviceUsageConsumer role, or a custom role with the serviceusage.services.use permission, by visiting https://console.developers.google.com/iam-admin/iam/admin?project=${project} and then retry. Propagation of the new permission may take a few minutes.`;
    return {
      status: 403,
      body: {
        error: {
          code: 403,
          message,
          errors: [{ message, domain: 'global', reason: 'forbidden' }],
          status: 'PERMISSION_DENIED',
          details: [
            {
              '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
              reason: 'USER_PROJECT_DENIED',
              domain: 'googleapis.com',
              metadata: { consumer: `projects/${project}` },
            },
          ],
        },
      },
    };
  }

  private verifyAssertion(assertion: string): boolean {
    const [h, c, sig] = assertion.split('.');
    if (!h || !c || !sig) return false;
    const v = createVerify('RSA-SHA256');
    v.update(`${h}.${c}`);
    if (!v.verify(this.serviceAccount.publicKeyPem, Buffer.from(sig, 'base64url'))) return false;
    const claims = JSON.parse(Buffer.from(c, 'base64url').toString('utf8')) as { iss?: string; aud?: string; scope?: string; exp?: number };
    return (
      claims.iss === this.serviceAccount.email &&
      claims.aud === this.tokenUri() &&
      /auth\/(compute|cloud-platform)/.test(claims.scope ?? '') &&
      (claims.exp ?? 0) > Date.now() / 1000
    );
  }

  /** POST oauth2.googleapis.com/token. */
  token(form: URLSearchParams, userProjectHeader: string | undefined): OauthAnswer {
    if (userProjectHeader) this.quotaHeaderOnTokenCalls++;
    const grant = form.get('grant_type');
    if (grant === 'urn:ietf:params:oauth:grant-type:jwt-bearer') {
      if (!this.verifyAssertion(form.get('assertion') ?? '')) {
        this.badAssertions++;
        return { status: 400, body: { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' } };
      }
      return this.bearer(this.issue({ kind: 'service-account', email: this.serviceAccount.email }));
    }
    if (grant === 'refresh_token') {
      const rt = this.refreshTokens.get(form.get('refresh_token') ?? '');
      if (!rt || rt.clientId !== form.get('client_id')) return { status: 400, body: { error: 'invalid_grant', error_description: 'Bad Request' } };
      if (rt.clientSecret !== form.get('client_secret')) return { status: 401, body: { error: 'invalid_client', error_description: 'Unauthorized' } };
      return this.bearer(this.issue({ kind: 'user', email: rt.email }));
    }
    return { status: 400, body: { error: 'unsupported_grant_type', error_description: `Invalid grant_type: ${grant ?? ''}` } };
  }

  private bearer(token: string): OauthAnswer {
    return { status: 200, body: { access_token: token, expires_in: 3599, token_type: 'Bearer' } };
  }

  /** POST sts.googleapis.com/v1/token (RFC 8693 as STS implements it). */
  sts(form: URLSearchParams, userProjectHeader: string | undefined): OauthAnswer {
    if (userProjectHeader) this.quotaHeaderOnTokenCalls++;
    const bad = (error: string, description: string): OauthAnswer => ({ status: 400, body: { error, error_description: description } });
    if (form.get('grant_type') !== STS_GRANT) return bad('unsupported_grant_type', `Invalid value for "grant_type": ${form.get('grant_type') ?? ''}`);
    if (form.get('requested_token_type') !== ACCESS_TOKEN_TYPE) return bad('invalid_request', 'Invalid value for "requested_token_type".');
    const type = form.get('subject_token_type') ?? '';
    if (!/^urn:ietf:params:oauth:token-type:(jwt|id_token|saml2|access_token)$|^urn:ietf:params:aws:token-type:aws4_request$/.test(type))
      return bad('invalid_request', 'Invalid value for "subject_token_type".');
    if (!form.get('scope')) return bad('invalid_request', 'The "scope" parameter is required.');
    const audience = form.get('audience') ?? '';
    const provider = this.poolProviders.get(audience);
    if (!provider)
      return bad(
        'invalid_target',
        'The target service indicated by the "audience" parameters is invalid. This might either be because the pool or provider is disabled or deleted or because it doesn\'t exist.',
      );
    const subject = provider.get(form.get('subject_token') ?? '');
    if (!subject) return bad('invalid_grant', 'The audience in ID Token does not match the expected audience.');
    const pool = audience.replace(/^\/\/iam\.googleapis\.com\//, '').replace(/\/providers\/[^/]+$/, '');
    const token = this.issue({ kind: 'federated', subject, pool });
    return { status: 200, body: { access_token: token, issued_token_type: ACCESS_TOKEN_TYPE, token_type: 'Bearer', expires_in: 3599 } };
  }

  /** POST iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/{email}:generateAccessToken. */
  generateAccessToken(email: string, authorization: string | undefined, body: string): OauthAnswer {
    const caller = this.principalOf(authorization);
    if (!caller)
      return {
        status: 401,
        body: {
          error: {
            code: 401,
            message: 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
            status: 'UNAUTHENTICATED',
          },
        },
      };
    const input = JSON.parse(body || '{}') as { scope?: string[]; lifetime?: string };
    if (!input.scope?.length) return { status: 400, body: { error: { code: 400, message: 'Scope required.', status: 'INVALID_ARGUMENT' } } };
    if (!this.impersonators.get(email)?.has(GoogleTokens.key(caller))) {
      return {
        status: 403,
        body: {
          error: {
            code: 403,
            message: "Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist).",
            status: 'PERMISSION_DENIED',
            details: [
              {
                '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
                reason: 'IAM_PERMISSION_DENIED',
                domain: 'iam.googleapis.com',
                metadata: { permission: 'iam.serviceAccounts.getAccessToken' },
              },
            ],
          },
        },
      };
    }
    const seconds = Number(/^(\d+)s$/.exec(input.lifetime ?? '3600s')?.[1] ?? 3600);
    return {
      status: 200,
      body: {
        accessToken: this.issue({ kind: 'service-account', email }),
        expireTime: new Date(Date.now() + seconds * 1000).toISOString().replace(/\.\d+Z$/, 'Z'),
      },
    };
  }
}
