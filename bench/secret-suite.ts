/**
 * One credential of every rule of the secret table (src/core/secret-rules.ts), with a look-alike
 * that is not one: the rule-table test, the every-entry-point test and the secretlint comparison
 * (bench/secretlint-compare.ts) share them.
 */
import { SECRET_RULES } from '../src/core/secret-rules.js';

/** Deterministic "random" strings, so the cases are stable and look like real keys. */
let seed = 42;
export function rnd(charset: string, n: number): string {
  let out = '';
  for (let i = 0; i < n; i++) {
    // 32-bit arithmetic: a float product past 2^53 loses its low bits, and the strings ran to zeros.
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    out += charset[(seed >>> 16) % charset.length];
  }
  return out;
}
export const AN = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
export const LOWER_AN = 'abcdefghijklmnopqrstuvwxyz0123456789';
export const HEX = '0123456789abcdef';
export const B64URL = `${AN}_-`;
export const B64 = `${AN}+/`;
export const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export interface Case {
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
const twilioSid = `AC${rnd(HEX, 32)}`;
const twilioToken = rnd(HEX, 32);
const awsId = 'AKIA' + rnd('ABCDEFGHIJKLMNOPQRSTUVWXYZ234567', 16);
const awsSecret = rnd(B64, 38) + 'aZ';

/** Every rule of the table, by id. */
export const SECRET_CASES: Record<string, Case> = {
  'private-key': c(`key:\n${PEM}\nend`, PEM.split('\n')[1]!, 'the private key is kept in the vault; see -----BEGIN CERTIFICATE-----'),
  'url-password': c('postgres://admin:s3cr3t-P4ss@db.internal:5432/app', 's3cr3t-P4ss', 'see https://example.com:8080/docs or git@github.com:org/repo.git'),
  jwt: c(`token ${JWT} end`, JWT, 'eyJust a word, and a.b.c'),
  'aws-key-pair': c(`aws configure set creds ${awsId} ${awsSecret}`, awsSecret, `not a key id: AKIAPOLLO ${awsSecret}`),
  'twilio-auth-token': c(`client = Client("${twilioSid}", "${twilioToken}")`, twilioToken, `account ${twilioSid} md5 ${twilioToken}`),
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
  'notion-token': c(`NOTION_TOKEN ntn_${rnd('0123456789', 11)}${rnd(AN, 35)}`, 'ntn_', 'ntn_ prefix and ntn_12345'),
  'figma-token': c(`figma figd_${rnd(B64URL, 48)}`, 'figd_', 'figd_ prefix, figd_short'),
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
  'docker-auth': c(
    '{\n\t"auths": {\n\t\t"registry.example.com": {\n\t\t\t"auth": "ZGV2dXNlcjpEY2tyUGFzc3cwcmQxMjM="\n\t\t}\n\t}\n}',
    'ZGV2dXNlcjpEY2tyUGFzc3cwcmQxMjM',
    '{"auth": "required", "auths": {}, "authProvider": "oidc", "auth": "b2F1dGgyLXRva2Vu"}',
  ),
  'netrc-password': c(
    'machine api.heroku.com\n  login me@example.com\n  password HrkNetrcTok3nQ9zW2\nmachine x.example login y password Zq8Wk2Lp',
    'HrkNetrcTok3nQ9zW2',
    'the password is hunter2\nlogin screen: password field is empty\npassword reset link sent',
  ),
  secret: c('DB_PASS=hunter2\nMYSQL_PWD=hunter3\nENCRYPTION_KEY: "abc"\nclient_secret=xyz\n_auth=dXNlcg==', 'hunter2', 'bypass=yes monkey=banana PWD=/home/u max_tokens=5 password_hash: abc'),
  'url-query-secret': c('GET https://x.blob.core.windows.net/c/b?sv=2022&sig=AbC%2Bdef123&se=1 and ?key=s3cretvalue', 'AbC%2Bdef123', 'GET /search?q=key&page=2&sort=key'),
};

/** Every rule has its case (the rule-table test checks the two lists are the same). */
export const SECRET_RULE_IDS: readonly string[] = SECRET_RULES.map((r) => r.id);
