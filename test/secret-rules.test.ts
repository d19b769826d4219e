/**
 * The rule table, one positive and one negative case per rule: the positive's secret must be gone
 * and the rule's placeholder present; the negative, a look-alike that is not a credential, must come
 * back unchanged. Then the benign values every transcript is full of, and hostile input.
 */
import { describe, expect, it } from 'vitest';
import { redactText } from '../src/memory/redact.js';
import { SECRET_RULES } from '../src/memory/secret-rules.js';
import { expectLinearTime } from './support/linear-time.js';

/**
 * Deterministic "random" strings, so the cases are stable and look like real keys. Each user has
 * its own sequence: the module's tables one (built at collection, whatever runs), each test body
 * another, so filtering with -t or shuffling never changes a test's input.
 */
function randomStrings(seed: number): (charset: string, n: number) => string {
  return (charset, n) => {
    let out = '';
    for (let i = 0; i < n; i++) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      out += charset[seed % charset.length];
    }
    return out;
  };
}
const rnd = randomStrings(42);
const AN = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const LOWER_AN = 'abcdefghijklmnopqrstuvwxyz0123456789';
const HEX = '0123456789abcdef';
const B64URL = `${AN}_-`;
const B64 = `${AN}+/`;
const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

interface Case {
  /** Text holding a credential. */
  positive: string;
  /** What must not survive (defaults to the whole positive minus its context words). */
  secret: string;
  /** A look-alike that is not one: unchanged. */
  negative: string;
}

function c(positive: string, secret: string, negative: string): Case {
  return { positive, secret, negative };
}

const PEM = ['-----BEGIN EC PRIVATE KEY-----', rnd(B64, 64), rnd(B64, 40), '-----END EC PRIVATE KEY-----'].join('\n');
const JWT = `eyJ${rnd(B64URL, 30)}.eyJ${rnd(B64URL, 40)}.${rnd(B64URL, 43)}`;

const npm = `npm_${rnd(AN, 36)}`;
const glpat = `glpat-${rnd(B64URL, 20)}`;
const hf = `hf_${rnd(LETTERS, 34)}`;
const sendgrid = `SG.${rnd(B64URL, 22)}.${rnd(B64URL, 43)}`;
const twilio = `SK${rnd(HEX, 32)}`;
const ya29 = `ya29.${rnd(B64URL, 60)}`;
const telegram = `123456789:AA${rnd(B64URL, 33)}`;
const dop = `dop_v1_${rnd(HEX, 64)}`;
const shpat = `shpat_${rnd(HEX, 32)}`;
const slackHook = `T${rnd('ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789', 10)}/B${rnd('ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789', 10)}/${rnd(AN, 24)}`;
const pypi = `pypi-AgEIcHlwaS5vcmc${rnd(B64URL, 70)}`;
const dckr = `dckr_pat_${rnd(B64URL, 27)}`;
const atlassian = `ATATT3xFfGF0${rnd(B64URL, 180)}=${rnd(HEX, 8)}`;
const mailgun = `key-${rnd(HEX, 32)}`;
const mailchimp = `${rnd(HEX, 32)}-us21`;
const nrak = `NRAK-${rnd('ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789', 27)}`;
const sntrys = `sntrys_eyJpYXQiOjE2ODQ${rnd(B64, 70)}`;
const hrku = `HRKU-AA${rnd(B64URL, 58)}`;
const vercel = `vcp_${rnd(AN, 56)}`;
const linear = `lin_api_${rnd(AN, 40)}`;
const doppler = `dp.pt.${rnd(AN, 43)}`;
const dapi = `dapi${rnd(HEX, 32)}`;
const gsk = `gsk_${rnd(AN, 52)}`;
const xai = `xai-${rnd(AN, 80)}`;
const r8 = `r8_${rnd(AN, 37)}`;
const azureKey = `${rnd(B64, 86)}==`;
const discord = rnd(B64URL, 68);
const teams = rnd(HEX, 32);
const zapier = rnd(LOWER_AN, 7);
const puttyLine = rnd(B64, 64);

/** Every rule of the table, by id. */
const CASES: Record<string, Case> = {
  'private-key': c(`key:\n${PEM}\nend`, PEM.split('\n')[1]!, 'the private key is kept in the vault; see -----BEGIN CERTIFICATE-----'),
  'url-password': c('postgres://admin:s3cr3t-P4ss@db.internal:5432/app', 's3cr3t-P4ss', 'see https://example.com:8080/docs or git@github.com:org/repo.git'),
  jwt: c(`token ${JWT} end`, JWT, 'eyJust a word, and a.b.c'),
  'aws-access-key': c('id AKIAIOSFODNN7EXAMPLE end', 'AKIAIOSFODNN7EXAMPLE', 'AKIAPOLLO is not a key, nor AKIA1234'),
  'anthropic-key': c(`use sk-ant-api03-${rnd(B64URL, 40)} now`, 'sk-ant-api03-', 'pip install sk-ant-lib-helpers'),
  'openai-key': c(`OPENAI=sk-proj-${rnd(AN, 40)}`, 'sk-proj-', 'pip install sk-learn-extensions-for-data'),
  'stripe-key': c(`sk_live_${rnd(AN, 24)}`, 'sk_live_', 'the sk_live_mode flag'),
  'stripe-webhook-secret': c(`whsec_${rnd(AN, 32)}`, 'whsec_', 'a whsec_ prefix alone'),
  'github-token': c(`ghp_${rnd(AN, 36)}`, 'ghp_', 'ghp_short and github_pat_ alone'),
  'gitlab-token': c(`git clone https://oauth2:${glpat}@gitlab.com/x.git; export GL=${glpat}`, glpat, 'glpat- is the prefix of a GitLab token'),
  'slack-token': c(`xoxb-${rnd('0123456789', 12)}-${rnd(AN, 24)}`, 'xoxb-', 'xoxb- tokens start like this'),
  'slack-webhook': c(`curl https://hooks.slack.com/services/${slackHook}`, slackHook.split('/')[2]!, 'https://hooks.slack.com/services/ is the base'),
  'discord-webhook': c(`https://discord.com/api/webhooks/123456789012345678/${discord}`, discord, 'https://discord.com/api/webhooks/ docs'),
  'teams-webhook': c(`https://contoso.webhook.office.com/webhookb2/${rnd(HEX, 8)}-${rnd(HEX, 4)}@${rnd(HEX, 8)}/IncomingWebhook/${teams}`, teams, 'post to webhook.office.com/webhookb2/'),
  'zapier-webhook': c(`https://hooks.zapier.com/hooks/catch/1234567/${zapier}/`, `/${zapier}/`, 'hooks.zapier.com/hooks/catch/ is the path'),
  'google-api-key': c('maps AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY key', 'AIzaSyD-9tSrke72', 'AIzaSy is how they start'),
  'google-oauth-token': c(`Authorization: OAuth ${ya29}`, ya29, 'ya29. is the prefix of Google access tokens'),
  'google-oauth-secret': c(`client_secret_json GOCSPX-${rnd(B64URL, 28)}`, 'GOCSPX-', 'GOCSPX- prefix'),
  'npm-token': c(`//registry.npmjs.org/:_authToken=${npm}\nnpm_token ${npm}`, npm, 'npm_config_cache=/tmp/npm npm_package_version'),
  'pypi-token': c(`password = ${pypi}\ntwine upload -p ${pypi}`, pypi.slice(0, 40), 'pypi-AgEI is how a PyPI token starts'),
  'rubygems-token': c(`rubygems_${rnd(HEX, 48)}`, 'rubygems_', 'the rubygems_api_key setting'),
  'docker-token': c(`echo ${dckr} | docker login -u me --password-stdin`, dckr, 'dckr_pat_ is the prefix'),
  'huggingface-token': c(`HF ${hf}`, hf, 'hf_hub_download and hf_transfer_enabled_by_default_here'),
  'sendgrid-key': c(`SENDGRID ${sendgrid}`, sendgrid, 'SG.Default.Settings and SG.x.y'),
  'twilio-key': c(`twilio api key ${twilio}`, twilio, `SKIP ${rnd(HEX, 32)} SK${rnd(HEX, 20)}`),
  'mailgun-key': c(`api:${mailgun}`, mailgun, 'key-value store, key-0123'),
  'mailchimp-key': c(`mc ${mailchimp}`, mailchimp, `checksum ${rnd(HEX, 32)} -us region`),
  'azure-storage-key': c(
    `DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=${azureKey};EndpointSuffix=core.windows.net`,
    azureKey.slice(0, 30),
    'DefaultEndpointsProtocol=https;AccountName=acct;EndpointSuffix=core.windows.net',
  ),
  'azure-ad-client-secret': c(`client secret abc8Q~${rnd(B64URL, 34)}`, 'abc8Q~', 'a Q~ in prose: abcQ~def'),
  'telegram-bot-token': c(`https://api.telegram.org/bot${telegram}/sendMessage`, telegram, 'ratio 123456789:AAB and 12:AA'),
  'digitalocean-token': c(`doctl auth init -t ${dop}`, dop, 'dop_v1_ tokens are 64 hex'),
  'shopify-token': c(`X-Shopify-Access-Token: ${shpat}`, shpat, 'shpat_ is a Shopify prefix'),
  'atlassian-token': c(`JIRA ${atlassian}`, atlassian.slice(0, 60), 'ATATT3 is the Atlassian prefix'),
  'new-relic-key': c(`NEW_RELIC ${nrak}`, nrak, 'NRAK- prefix; NRAK-SHORT'),
  'sentry-token': c(`SENTRY ${sntrys}`, sntrys.slice(0, 40), 'sntrys_ prefix'),
  'heroku-key': c(`heroku ${hrku}`, hrku, 'HRKU- prefix'),
  'vercel-token': c(`vercel --token-file x; VERCEL ${vercel}`, vercel, 'vcp_ prefix and vca_short'),
  'linear-key': c(`LINEAR ${linear}`, linear, 'lin_api_ prefix'),
  'doppler-token': c(`DOPPLER ${doppler}`, doppler, 'dp.pt. prefix, dp.st.short'),
  'databricks-token': c(`DATABRICKS ${dapi}`, dapi, 'dapi is a word, dapi1234'),
  'groq-key': c(`GROQ ${gsk}`, gsk, 'gsk_ prefix, gsk_short'),
  'xai-key': c(`XAI ${xai}`, xai, 'xai-sdk and xai-grok-client'),
  'replicate-token': c(`REPLICATE ${r8}`, r8, 'r8_ prefix and r8_short'),
  'perplexity-key': c(`pplx-${rnd(AN, 48)}`, 'pplx-', 'pplx-api docs'),
  'nvidia-key': c(`nvapi-${rnd(B64URL, 64)}`, 'nvapi-', 'nvapi-docs'),
  'langsmith-key': c(`lsv2_pt_${rnd(HEX, 32)}_${rnd(HEX, 10)}`, 'lsv2_pt_', 'lsv2_pt_ prefix'),
  'vault-token': c(`VAULT hvs.${rnd(B64URL, 90)}`, 'hvs.', 'hvs.prefix'),
  'terraform-token': c(`${rnd(AN, 14)}.atlasv1.${rnd(B64URL, 67)}`, '.atlasv1.', 'x.atlasv1.y'),
  'postman-key': c(`PMAK-${rnd(HEX, 24)}-${rnd(HEX, 34)}`, 'PMAK-', 'PMAK- prefix'),
  'square-token': c(`sq0atp-${rnd(B64URL, 22)}`, 'sq0atp-', 'sq0atp- prefix'),
  'grafana-token': c(`glsa_${rnd(AN, 32)}_${rnd(HEX, 8)}`, 'glsa_', 'glsa_ prefix and glc_short'),
  'planetscale-token': c(`pscale_tkn_${rnd(B64URL, 43)}`, 'pscale_tkn_', 'pscale_tkn_ prefix'),
  'supabase-key': c(`sbp_${rnd(HEX, 40)}`, 'sbp_', 'sbp_ prefix'),
  'age-secret-key': c(`AGE-SECRET-KEY-1${rnd('QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L', 58)}`, 'AGE-SECRET-KEY-1', 'AGE-SECRET-KEY-1 prefix'),
  'onepassword-token': c(`ops_eyJ${rnd(B64, 150)}`, 'ops_eyJ', 'ops_eyJ prefix'),
  'alibaba-key': c(`LTAI${rnd(AN, 20)}`, 'LTAI', 'LTAI prefix'),
  'facebook-token': c(`EAA${rnd(AN, 120)}`, 'EAA', 'EAAB short'),
  'everme-token': c('agent evt_a1b2c3d4e5f6a7b8c9d0 ok', 'evt_a1b2c3d4e5f6a7b8c9d0', 'evt_handler_registry'),
  'putty-private-key': c(
    `PuTTY-User-Key-File-3: ssh-ed25519\nPrivate-Lines: 2\n${puttyLine}\n${rnd(B64, 20)}\nPrivate-MAC: ${rnd(HEX, 64)}`,
    puttyLine,
    'Private-Lines: none listed here',
  ),
  'aws-secret-key': c('aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', 'wJalrXUtnFEMI', 'a bare 40-char value wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'),
  'bearer-token': c('Authorization: Bearer 0a1b2c3d4e5f6a7b8c9d', '0a1b2c3d4e5f6a7b8c9d', 'bearer authentication'),
  'basic-auth': c('curl -H "Authorization: Basic dXNlcjpwYXNzd29yZA==" x', 'dXNlcjpwYXNzd29yZA', 'basic authentication'),
  'cli-password-flag': c('psql --password hunter2 && vault login --token=s3cr3tT0k && gh --api-key "k y"', 'hunter2', 'docker login --password-stdin; git --token-file=x --password $PW --token <token>'),
  'cli-user-password': c('curl -u admin:hunter2 https://x', 'hunter2', 'git push -u origin main; docker run -u 1000:1000 img'),
  'cli-password-short-flag': c("mysql -uroot -phunter2 db && sshpass -p 'pa ss' ssh host", 'hunter2', 'mkdir -p build; ssh -p2222 host; mysql -p appdb'),
  secret: c('DB_PASS=hunter2\nMYSQL_PWD=hunter3\nENCRYPTION_KEY: "abc"\nclient_secret=xyz\n_auth=dXNlcg==', 'hunter2', 'bypass=yes monkey=banana PWD=/home/u max_tokens=5 password_hash: abc'),
  'url-query-secret': c('GET https://x.blob.core.windows.net/c/b?sv=2022&sig=AbC%2Bdef123&se=1 and ?key=s3cretvalue', 'AbC%2Bdef123', 'GET /search?q=key&page=2&sort=key'),
};

describe('the secret rule table', () => {
  it('has a positive and a negative case for every rule', () => {
    expect(Object.keys(CASES).sort()).toEqual(SECRET_RULES.map((r) => r.id).sort());
  });

  for (const rule of SECRET_RULES) {
    const tc = CASES[rule.id];
    it(`${rule.id}: masks the positive, keeps the negative`, () => {
      expect(tc, `no case for ${rule.id}`).toBeDefined();
      const masked = redactText(tc!.positive);
      expect(masked, masked).not.toContain(tc!.secret);
      expect(masked).toContain(`[REDACTED:${rule.id}]`);
      expect(redactText(tc!.negative)).toBe(tc!.negative);
      // Idempotent.
      expect(redactText(masked)).toBe(masked);
    });
  }
});

describe('providers covered by the generic rules', () => {
  it.each<[string, string, string]>([
    ['Datadog API key', `DD_API_KEY=${rnd(HEX, 32)}`, 'DD_API_KEY=[REDACTED:secret]'],
    ['Datadog app key (JSON)', `{"datadog_app_key": "${rnd(HEX, 40)}"}`, '{"datadog_app_key": "[REDACTED:secret]"}'],
    ['Cohere key', `COHERE_API_KEY=${rnd(AN, 40)}`, 'COHERE_API_KEY=[REDACTED:secret]'],
    ['Twilio auth token', `TWILIO_AUTH_TOKEN=${rnd(HEX, 32)}`, 'TWILIO_AUTH_TOKEN=[REDACTED:secret]'],
    ['Heroku legacy key', `HEROKU_API_KEY=${'550e8400-e29b-41d4-a716-446655440000'}`, 'HEROKU_API_KEY=[REDACTED:secret]'],
    ['Sentry DSN with secret', 'https://abc123:def456@o1.ingest.sentry.io/42', 'https://abc123:[REDACTED:url-password]@o1.ingest.sentry.io/42'],
    ['ADO.NET connection string', 'Server=db;User Id=sa;Password=Hunter2!;', 'Server=db;User Id=sa;Password=[REDACTED:password];'],
    ['ODBC Pwd', 'Driver={x};Uid=sa;Pwd=Hunter2!;', 'Driver={x};Uid=sa;Pwd=[REDACTED:password];'],
    ['yaml password', 'db:\n  password: hunter2', 'db:\n  password: [REDACTED:password]'],
    ['ini secret', '[s3]\nsecret_key = abc/def', '[s3]\nsecret_key = [REDACTED:secret]'],
  ])('%s', (_name, input, output) => {
    expect(redactText(input)).toBe(output);
  });
});

describe('a key split by an escaped newline', () => {
  it('is masked whole, both halves', () => {
    const rnd = randomStrings(7);
    const first = `sk-proj-${rnd(AN, 24)}`;
    const second = rnd(AN, 20);
    const masked = redactText(`export OPENAI_API_KEY=${first}\\\n${second}\nnext`);
    expect(masked).not.toContain(first.slice(8));
    expect(masked).not.toContain(second);
    expect(masked).toContain('\nnext');
    const pem = `"-----BEGIN RSA PRIVATE KEY-----\\n${rnd(B64, 64)}\\n${rnd(B64, 30)}\\n-----END RSA PRIVATE KEY-----\\n"`;
    expect(redactText(`{"private_key": ${pem}}`)).toBe('{"private_key": "[REDACTED:private-key]\\n"}');
  });
});

describe('benign values survive', () => {
  it('git SHAs, UUIDs, hashes, base64 images and ordinary hex come back unchanged', () => {
    const rnd = randomStrings(11);
    const png = `data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk${rnd(B64, 2000)}==`;
    const text = [
      'commit 3f9c2a7d41e84b0c9d5a6e1f7b2c8d40aa11bb22 (HEAD -> main)',
      'Merge: 3f9c2a7 41e84b0',
      'session 550e8400-e29b-41d4-a716-446655440000 and 123e4567-e89b-12d3-a456-426614174000',
      'sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
      'md5 d41d8cd98f00b204e9800998ecf8427e sha1 da39a3ee5e6b4b0d3255bfef95601890afd80709',
      `sha512 ${rnd(HEX, 128)}`,
      png,
      `addr 0xdeadbeefcafebabe mem ${rnd(HEX, 64)} ${rnd(HEX, 40)} ${rnd(HEX, 32)}`,
      'integrity sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUR/2tigk4/Pb1Cw7w==',
      'npm install lodash; pip install requests; docker run -p 8080:80 nginx; mkdir -p a/b',
      'const key = await getKey(); if (token) { refresh(token); } // password reset flow',
    ].join('\n');
    expect(redactText(text)).toBe(text);
  });
});

describe('linear time on hostile input', () => {
  const units = [
    'npm_', 'glpat-', 'SG.', 'SK', 'ya29.', '1234567:AA', 'dop_v1_', 'shpat_', 'hooks.slack.com/services/', 'AccountKey=',
    'Private-Lines: 1\n', '--password ', '-u a:', 'mysql -p', '?key=', 'a_key=b ', 'abcQ~', 'sk-\\\n', 'EAA', 'key-',
    'discord.com/api/webhooks/123456/', '.atlasv1.', 'ATATT3', 'pypi-AgEIcHlwaS5vcmc', 'eyJ-', '-----BEGIN PRIVATE KEY-----',
  ];
  it.each(units)('%j repeated over 1 MB finishes in linear time', (unit) => {
    expectLinearTime(redactText, unit.repeat(Math.ceil(1_000_000 / unit.length)));
  });
});
