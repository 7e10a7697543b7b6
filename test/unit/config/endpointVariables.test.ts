import { test } from 'node:test';
import assert from 'node:assert/strict';
import { carriedSecrets, endpointRedirects, endpointVariable, redirectsOf } from '../../../src/core/config/endpointVariables';
import { checkDotenv } from '../../../src/core/config/dotenv';

test('every variable the issue names redirects credentials or data; look-alikes do not', () => {
  const redirecting = [
    'HF_ENDPOINT',
    'HF_INFERENCE_ENDPOINT',
    'HUGGINGFACE_CO_URL_HOME',
    'WANDB_BASE_URL',
    'MLFLOW_TRACKING_URI',
    'MLFLOW_S3_ENDPOINT_URL',
    'AWS_ENDPOINT_URL',
    'AWS_ENDPOINT_URL_S3',
    'HTTPS_PROXY',
    'http_proxy',
    'ALL_PROXY',
    'all_proxy',
    'REQUESTS_CA_BUNDLE',
    'SSL_CERT_FILE',
    'CURL_CA_BUNDLE',
    'PIP_INDEX_URL',
    'PIP_EXTRA_INDEX_URL',
  ];
  for (const k of redirecting) assert.ok(endpointVariable(k), k);
  for (const k of ['HF_TOKEN', 'HF_HOME', 'HF_HUB_ENABLE_HF_TRANSFER', 'WANDB_PROJECT', 'NO_PROXY', 'no_proxy', 'AWS_REGION', 'MLFLOW_EXPERIMENT_NAME'])
    assert.equal(endpointVariable(k), undefined, k);
});

test('origin and host: no credentials shown, default servers and local MLflow stores are no redirect', () => {
  assert.deepEqual(redirectsOf('HF_ENDPOINT', 'http://127.0.0.1:8080/'), [
    { variable: 'HF_ENDPOINT', what: 'Hugging Face Hub requests', carries: 'hf', host: '127.0.0.1:8080', origin: 'http://127.0.0.1:8080' },
  ]);
  const proxy = redirectsOf('HTTPS_PROXY', 'http://alice:s3cret@Proxy.Corp:3128');
  assert.equal(proxy[0]?.host, 'proxy.corp:3128');
  assert.ok(!JSON.stringify(proxy).includes('s3cret'), 'the proxy password is not in the redirect');
  assert.equal(redirectsOf('ALL_PROXY', 'socks5://10.0.0.1:1080')[0]?.origin, 'socks5://10.0.0.1:1080');
  assert.equal(redirectsOf('http_proxy', 'proxy.corp:3128')[0]?.origin, 'http://proxy.corp:3128', 'a bare host:port is http, as curl reads it');
  assert.deepEqual(redirectsOf('HF_ENDPOINT', 'https://huggingface.co'), []);
  assert.deepEqual(redirectsOf('WANDB_BASE_URL', 'https://api.wandb.ai/'), []);
  assert.deepEqual(redirectsOf('PIP_INDEX_URL', 'https://pypi.org/simple'), []);
  assert.deepEqual(redirectsOf('MLFLOW_TRACKING_URI', 'file:///data/mlruns'), []);
  assert.deepEqual(redirectsOf('MLFLOW_TRACKING_URI', './mlruns'), []);
  assert.equal(redirectsOf('MLFLOW_TRACKING_URI', 'https://mlflow.example:5000')[0]?.host, 'mlflow.example:5000');
  assert.deepEqual(redirectsOf('HF_ENDPOINT', '  '), []);
  assert.deepEqual(redirectsOf('REQUESTS_CA_BUNDLE', '/etc/ssl/corp.pem')[0]?.origin, 'file:/etc/ssl/corp.pem');
  assert.deepEqual(
    redirectsOf('PIP_EXTRA_INDEX_URL', 'https://pypi.org/simple https://pkgs.evil.example/simple').map((r) => r.host),
    ['pkgs.evil.example'],
  );
  assert.deepEqual(
    endpointRedirects({ HF_TOKEN: 'x', WANDB_BASE_URL: 'https://wandb.corp', AWS_REGION: 'us-east-1' }).map((r) => r.variable),
    ['WANDB_BASE_URL'],
  );
});

test('which stored tokens travel with a redirect', () => {
  const stored = ['HF_TOKEN', 'WANDB_API_KEY'];
  assert.deepEqual(carriedSecrets(redirectsOf('HF_ENDPOINT', 'http://h')[0]!, stored), ['HF_TOKEN']);
  assert.deepEqual(carriedSecrets(redirectsOf('WANDB_BASE_URL', 'http://h')[0]!, stored), ['WANDB_API_KEY']);
  assert.deepEqual(carriedSecrets(redirectsOf('HTTPS_PROXY', 'http://h')[0]!, stored), stored);
  assert.deepEqual(carriedSecrets(redirectsOf('PIP_INDEX_URL', 'http://h/simple')[0]!, stored), stored);
  assert.deepEqual(carriedSecrets(redirectsOf('MLFLOW_TRACKING_URI', 'http://h')[0]!, stored), []);
});

test('.env: a redirecting variable is RFT609 on its value, naming the variable and the host; example files and defaults are not', () => {
  const text = 'HF_TOKEN=hf_x\nHF_ENDPOINT=http://127.0.0.1:9/\nWANDB_BASE_URL=https://api.wandb.ai\nHTTPS_PROXY=http://u:p@proxy.corp:3128\n';
  const ds = checkDotenv(text, { fileName: '/ws/.env' }).filter((d) => d.code === 'RFT609');
  assert.deepEqual(
    ds.map((d) => [text.slice(d.start, d.end), d.severity]),
    [
      ['http://127.0.0.1:9/', 'warning'],
      ['http://u:p@proxy.corp:3128', 'warning'],
    ],
  );
  assert.match(ds[0]!.message, /^HF_ENDPOINT points Hugging Face Hub requests at 127\.0\.0\.1:9: .*Hugging Face token/);
  assert.match(ds[1]!.message, /^HTTPS_PROXY points .* at proxy\.corp:3128: /);
  assert.ok(!ds[1]!.message.includes('u:p'), 'no proxy credentials in the message');
  assert.deepEqual(
    checkDotenv(text, { fileName: '/ws/.env.example' }).filter((d) => d.code === 'RFT609'),
    [],
  );
});
