import { describe, expect, it } from 'vitest';

import { REDACTION_RULES, redactJsonValue, redactText } from '../src/core/redact.js';
import { expectLinearTime } from './support/linear-time.js';

const PEM = [
  '-----BEGIN RSA PRIVATE KEY-----',
  'MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB',
  'aFDrBz9vFqU4yMW7Q2mOxq7nWzeM0kq4gXbUq3o9Q1Tq8f1mZ0Yw==',
  '-----END RSA PRIVATE KEY-----',
].join('\n');

/** One readable example per rule: input and the exact masked output. */
const EXAMPLES: Array<[input: string, masked: string]> = [
  ['id AKIAIOSFODNN7EXAMPLE end', 'id [REDACTED:aws-access-key] end'],
  ['id ASIAIOSFODNN7EXAMPLE end', 'id [REDACTED:aws-access-key] end'],
  [
    'aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
    'aws_secret_access_key = [REDACTED:aws-secret-key]',
  ],
  ['"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"', '"SecretAccessKey": "[REDACTED:aws-secret-key]"'],
  // As `aws configure` prompts for it (the bracket holds what it kept so far), and as the AWS console labels it.
  [
    'AWS Secret Access Key [None]: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
    'AWS Secret Access Key [None]: [REDACTED:aws-secret-key]',
  ],
  [
    'AWS Secret Access Key [****************EKEY]: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
    'AWS Secret Access Key [****************EKEY]: [REDACTED:aws-secret-key]',
  ],
  ['Secret access key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', 'Secret access key: [REDACTED:aws-secret-key]'],
  ['OPENAI_API_KEY=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv', 'OPENAI_API_KEY=[REDACTED:openai-key]'],
  ['key sk-Ab3dEf6hIj9kLm2nOp5qRs8tUvWx done', 'key [REDACTED:openai-key] done'],
  ['use sk-ant-api03-Xy7zAb3dEf6hIj9kLm2nOp5qRs8tUv-AA now', 'use [REDACTED:anthropic-key] now'],
  ['sk_live_4eC39HqLyjWDarjtT1zdp7dc and sk_test_4eC39HqLyjWDarjtT1zdp7dc', '[REDACTED:stripe-key] and [REDACTED:stripe-key]'],
  ['restricted rk_live_51HcR2a4eC39HqLyjWD', 'restricted [REDACTED:stripe-key]'],
  [
    'ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 gho_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8',
    '[REDACTED:github-token] [REDACTED:github-token]',
  ],
  [
    'ghs_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 ghu_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8',
    '[REDACTED:github-token] [REDACTED:github-token]',
  ],
  ['pat github_pat_11ABCDEFG0a1B2c3D4e5F6_g7H8i9J0k1L2m3N4o5P6q7R8', 'pat [REDACTED:github-token]'],
  ['slack xoxb-1234567890-0987654321-AbCdEfGhIjKl ok', 'slack [REDACTED:slack-token] ok'],
  ['xoxp-1234567890-0987654321', '[REDACTED:slack-token]'],
  ['maps AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY key', 'maps [REDACTED:google-api-key] key'],
  [
    'jwt eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U end',
    'jwt [REDACTED:jwt] end',
  ],
  ['Authorization: Bearer 0a1b2c3d4e5f6a7b8c9d', 'Authorization: Bearer [REDACTED:bearer-token]'],
  ['EVERME agent evt_a1b2c3d4e5f6a7b8c9d0 account emk_Z9y8X7w6V5u4', 'EVERME agent [REDACTED:everme-token] account [REDACTED:everme-token]'],
  [`key:\n${PEM}\nafter`, 'key:\n[REDACTED:private-key]\nafter'],
  [
    'DATABASE_URL=postgres://admin:s3cr3t-P4ss@db.internal:5432/app',
    'DATABASE_URL=postgres://admin:[REDACTED:url-password]@db.internal:5432/app',
  ],
  ['curl -H "Authorization: Basic dXNlcjpwYXNzd29yZA==" x', 'curl -H "Authorization: Basic [REDACTED:basic-auth]" x'],
  ['password=hunter2', 'password=[REDACTED:password]'],
  ['api_key: abc123', 'api_key: [REDACTED:secret]'],
];

describe('redactText', () => {
  it.each(EXAMPLES)('masks %j', (input, masked) => {
    expect(redactText(input)).toBe(masked);
  });

  it('names only rules of the table (test/secret-rules.test.ts has a case for every rule)', () => {
    const named = new Set(EXAMPLES.flatMap(([, masked]) => [...masked.matchAll(/\[REDACTED:([a-z-]+)\]/g)].map((m) => m[1]!)));
    for (const name of named) expect(REDACTION_RULES).toContain(name);
  });

  it('is idempotent: masking masked text changes nothing', () => {
    for (const [input] of EXAMPLES) {
      const once = redactText(input);
      expect(redactText(once)).toBe(once);
    }
  });

  it.each<[string, string]>([
    ['passwd: hunter2', 'passwd: [REDACTED:password]'],
    ['"password": "hunter 2"', '"password": "[REDACTED:password]"'],
    ['PASSWORD="hunter2"', 'PASSWORD="[REDACTED:password]"'],
    ["DB_Password='hunter2'", "DB_Password='[REDACTED:password]'"],
    ['password := "gopw"', 'password := "[REDACTED:password]"'],
    ["'password' => 'phpw'", "'password' => '[REDACTED:password]'"],
    ['secret=abc', 'secret=[REDACTED:secret]'],
    ['client_secret: abc', 'client_secret: [REDACTED:secret]'],
    ['set apikey=abc API-KEY: def', 'set apikey=[REDACTED:secret] API-KEY: [REDACTED:secret]'],
    ['GET /cb?access_token=abc&state=1', 'GET /cb?access_token=[REDACTED:secret]&state=1'],
    ['Token = abc', 'Token = [REDACTED:secret]'],
    ['{\\"token\\":\\"abc\\"}', '{\\"token\\":\\"[REDACTED:secret]\\"}'],
  ])('masks only the value of the assignment %j', (input, masked) => {
    expect(redactText(input)).toBe(masked);
  });

  it.each<[string, string]>([
    ['DB_PASSWORD=Tr0ub4dor&3horseBatteryZ9', 'DB_PASSWORD=[REDACTED:password]'],
    ['SMTP_PASSWORD=mail;Gr8Kq2Lp7Vx4\nREDIS_PASSWORD=ab,Hq3vN8pL2xR7', 'SMTP_PASSWORD=[REDACTED:password]\nREDIS_PASSWORD=[REDACTED:password]'],
    ['export API_TOKEN=a)b]c}d>e # rotated monthly', 'export API_TOKEN=[REDACTED:secret] # rotated monthly'],
    ['  DB_PASS=correct horse battery staple', '  DB_PASS=[REDACTED:password]'],
    ['apikey=abc API-KEY: def', 'apikey=[REDACTED:secret]'],
    ['PGPASSWORD=hunter2 psql -h db', 'PGPASSWORD=[REDACTED:password]'],
    // As a read tool and `cat -n` number the lines of a .env file.
    ['     3\u2192DB_PASSWORD=a&b\n     4\tREDIS_PASSWORD=c;d', '     3\u2192DB_PASSWORD=[REDACTED:password]\n     4\tREDIS_PASSWORD=[REDACTED:password]'],
    ['AUTH_TOKEN="a&b" # quoted: to its closing quote', 'AUTH_TOKEN="[REDACTED:secret]" # quoted: to its closing quote'],
    // A docker-compose `environment:` list, and the same line as a string in docker inspect's JSON.
    ['  - DB_PASSWORD=Tr0ub4dor&3horse', '  - DB_PASSWORD=[REDACTED:password]'],
    ['"Env": ["DB_PASSWORD=Tr0ub4dor&3horse", "PATH=/usr/bin"]', '"Env": ["DB_PASSWORD=[REDACTED:password]", "PATH=/usr/bin"]'],
    // Inside other text the assignment still ends where the text goes on.
    ['curl "https://x/?a=1" -d db_password=abc&next=1', 'curl "https://x/?a=1" -d db_password=[REDACTED:password]&next=1'],
    // An ini or properties file writes blanks around `=`; the value still runs to the end of the line.
    ['[mysqld]\npassword = correct horse battery staple', '[mysqld]\npassword = [REDACTED:password]'],
    ['db.password = p4ss&w0rd', 'db.password = [REDACTED:password]'],
    // As one quoted string the value ends at the quote that opened it, a JSON escape inside included.
    ['"Env": ["DB_PASSWORD=it\'s&x9Q"]', '"Env": ["DB_PASSWORD=[REDACTED:password]"]'],
    ['"DB_PASSWORD=ab\\"c&d9Q", "X=1"', '"DB_PASSWORD=[REDACTED:password]", "X=1"'],
    // A first word that calls something is code, not an env line: the rest of the line stays.
    ['SECRET_KEY = fetch_secret(name) or fallback', 'SECRET_KEY = [REDACTED:secret]) or fallback'],
  ])('masks an env-style line\'s value to the end of the line: %j', (input, masked) => {
    expect(redactText(input)).toBe(masked);
  });

  it.each([
    'TOKEN=$GITHUB_TOKEN ./deploy.sh',
    'API_KEY=<your key here> # fill in',
    'password: string;',
    'PASSWORD=${DB_PASSWORD}',
    'if password == "x":',
    'let t = Token::new();',
    'max_tokens=100 total_tokens: 5',
    'the password is hunter2',
    'password_hash: abc',
    '"password": ""',
  ])('leaves %j alone (no credential value)', (text) => {
    expect(redactText(text)).toBe(text);
  });

  it('keeps git SHAs, UUIDs, hex and ordinary words and URLs', () => {
    const text = [
      'commit 3f9c2a7d41e84b0c9d5a6e1f7b2c8d40aa11bb22',
      'session 550e8400-e29b-41d4-a716-446655440000',
      'addr 0xdeadbeefcafebabe sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
      'a bare 40-char value wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY has no aws context',
      'pip install sk-learn; evt_handler_registry; bearer authentication; a token; secrets',
      'see https://example.com:8080/docs or mail user@example.com',
    ].join('\n');
    expect(redactText(text)).toBe(text);
  });

  it('masks a private key without END from BEGIN to the end of its base64 body', () => {
    const truncated = 'cat id_rsa\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQyNTUxOQAAACB\n\nthe file was cut here';
    expect(redactText(truncated)).toBe('cat id_rsa\n[REDACTED:private-key]\n\nthe file was cut here');
  });

  it('masks the body of a key without END whose lines carry the BEGIN line\'s indentation or line number', () => {
    const numbered = [
      '     1\u2192-----BEGIN RSA PRIVATE KEY-----',
      '     2\u2192MIIEowIBAAKCAQEAxK3vQ7pLm2Zc4Tn8Rk3WbYs6Hd1Jf5Ga0Ue7Ci2Ko9Mq4XwB',
      '     3\u2192Zt8Nq2Lp7Vx4Rk9Ws3Hd6Jf1Ga5Ue0Ci7Ko2Mq9XwBzT4Nq8Lp3Vx7Rk2Ws6Hd1J',
      '',
      '[showing lines 1-3 of 27]',
    ].join('\n');
    expect(redactText(numbered)).toBe('     1\u2192[REDACTED:private-key]\n\n[showing lines 1-3 of 27]');
    const catN = '     1\t-----BEGIN PRIVATE KEY-----\n     2\tMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n     3\tthe read stopped here';
    expect(redactText(catN)).toBe('     1\t[REDACTED:private-key]\n     3\tthe read stopped here');
    const yaml = [
      'tls:',
      '  key: |',
      '    -----BEGIN EC PRIVATE KEY-----',
      '    MHcCAQEEIGk2Lp7Vx4Rk9Ws3Hd6Jf1Ga5Ue0Ci7Ko2Mq9XwBzT4oAoGCCqGSM49',
      '    AwEHoUQDQgAEzT4Nq8Lp3Vx7Rk2Ws6Hd1JZt8Nq2Lp7Vx4Rk9Ws3Hd6Jf1Ga5U',
      '  cert: cert.pem',
    ].join('\n');
    expect(redactText(yaml)).toBe('tls:\n  key: |\n    [REDACTED:private-key]\n  cert: cert.pem');
  });

  it('masks what a JSON \\u escape hid (Go writes & as \\u0026), and leaves escaped text without a credential as it was', () => {
    const sas = '{"sasUrl":"https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02\\u0026sp=r\\u0026sig=Zk8PqR3mW7vT2xN9bL5cF1hJ%2BaQ4sD6fG8hJ0kL2mN4%3D"}';
    expect(redactText(sas)).toBe('{"sasUrl":"https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&sp=r&sig=[REDACTED:url-query-secret]"}');
    const s3 = '{"url":"https://bkt.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256\\u0026X-Amz-Signature=9f8e7d6c5b4a39281706f5e4d3c2b1a0"}';
    expect(redactText(s3)).toBe('{"url":"https://bkt.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=[REDACTED:url-query-secret]"}');
    expect(redactText('{"stripe":"\\u0073k_live_05XnCmWpB1dHt1WeJ7eF9fN2cT3bR1vM1iB9"}')).toBe('{"stripe":"[REDACTED:stripe-key]"}');
    // Quotes and backslashes stay escaped: the JSON string stays valid.
    expect(redactText('{"a":"\\u0022x\\u0022 \\u0073k_live_05XnCmWpB1dHt1WeJ7eF9f"}')).toBe('{"a":"\\u0022x\\u0022 [REDACTED:stripe-key]"}');
    for (const clean of ['{"q":"a=1\\u0026b=2\\u0026page=3"}', '{"t":"\\u4e2d\\u6587 \\u0026 more"}']) expect(redactText(clean)).toBe(clean);
  });

  it.each<[string, string]>([
    [
      '{\n\t"auths": {\n\t\t"registry.example.com": {\n\t\t\t"auth": "ZGV2dXNlcjpEY2tyUGFzc3cwcmQxMjM="\n\t\t}\n\t}\n}',
      '{\n\t"auths": {\n\t\t"registry.example.com": {\n\t\t\t"auth": "[REDACTED:docker-auth]"\n\t\t}\n\t}\n}',
    ],
    ['{\\"auth\\":\\"ZGV2dXNlcjpEY2tyUGFzc3cwcmQxMjM=\\"}', '{\\"auth\\":\\"[REDACTED:docker-auth]\\"}'],
    ['machine api.heroku.com\n  login me@example.com\n  password HrkNetrcTok3nQ9zW2', 'machine api.heroku.com\n  login me@example.com\n  password [REDACTED:netrc-password]'],
    ['machine api.github.com login bot password ghNetrcPw7Q2 protocol https', 'machine api.github.com login bot password [REDACTED:netrc-password] protocol https'],
    [
      'SECRET_KEY_BASE=9f3c1a7b2e8d4f6a0c5b9e1d3f7a2c8b4e6d0f1a3c5e7b9d2f4a6c8e0b1d3f5a7c9',
      'SECRET_KEY_BASE=[REDACTED:secret]',
    ],
    [
      'docker login -u devuser -p DckrL0ginPw7Qz registry.example.com; redis-cli -h cache -a R3disCliPwQ8z ping',
      'docker login -u devuser -p [REDACTED:cli-password-short-flag] registry.example.com; redis-cli -h cache -a [REDACTED:cli-password-short-flag] ping',
    ],
  ])('masks a credential file or flag of everyday tools: %j', (input, masked) => {
    expect(redactText(input)).toBe(masked);
  });

  it.each([
    '{"auth": "oidc", "auth": "b2F1dGgyLXRva2Vu"}',
    'login screen: password field is empty\npassword reset link sent',
    'docker login -u me --password-stdin registry; redis-cli -a $REDIS_PASSWORD ping; docker run -p 8080:80 img',
  ])('leaves %j alone (no credential of those tools)', (text) => {
    expect(redactText(text)).toBe(text);
  });

  it('keeps scheme, user and host of a URL with a password', () => {
    expect(redactText('redis://:pw123@cache:6379 and https://bob:pa:ss@git.example.com/r.git')).toBe(
      'redis://:[REDACTED:url-password]@cache:6379 and https://bob:[REDACTED:url-password]@git.example.com/r.git',
    );
  });

  it('masks a URL password with a raw @ up to the last @ before the host, and no further', () => {
    expect(redactText('url postgresql://app:Sup3r@Secret99xQ@db.example.com:5432/app')).toBe('url postgresql://app:[REDACTED:url-password]@db.example.com:5432/app');
    expect(redactText('see https://bob:pw1@git.example.com/u?mail=a@b.example and https://x.example/@me')).toBe(
      'see https://bob:[REDACTED:url-password]@git.example.com/u?mail=a@b.example and https://x.example/@me',
    );
  });

  it('stays fast on 1 MB hostile inputs and 10 MB of clean text', () => {
    const hostile = [
      'a'.repeat(1e6),
      'sk-'.repeat(3e5),
      '-----BEGIN PRIVATE KEY-----'.repeat(4e4),
      '-----BEGIN PRIVATE KEY-----\n' + 'A'.repeat(1e6),
      'password='.repeat(1.1e5),
      'password: "'.repeat(9e4),
      'eyJ-'.repeat(2.5e5),
      'a://'.repeat(2.5e5),
      'x://' + 'a:'.repeat(5e5),
      'Bearer '.repeat(1.4e5),
      'evt_'.repeat(2.5e5),
      'aws_secret_access_key='.repeat(4.5e4),
      '\\"token\\":\\"'.repeat(7e4),
      'DB_PASSWORD=' + 'a&'.repeat(5e5),
      'x_key=y\n'.repeat(1.2e5),
      'A'.repeat(1e6) + '_KEY=x',
      'x ' + '_key=&'.repeat(1.6e5),
      'x://u:' + '@'.repeat(1e6),
      ' '.repeat(60) + '-----BEGIN PRIVATE KEY-----'.repeat(4e4),
      '\\u0026'.repeat(1.7e5),
      'machine x login y '.repeat(6e4) + 'password',
      'login x\npassword '.repeat(6e4),
      '"auth": "'.repeat(1e5),
      'docker login -p'.repeat(6e4),
      '?a=1\\u0026sig='.repeat(7e4),
      '  1\u2192-----BEGIN PRIVATE KEY-----\n' + '  2\u2192AAAA\n'.repeat(1.2e5),
    ];
    const clean = 'The quick brown fox jumps over the lazy dog, commit 3f9c2a7d, see the docs.\n'.repeat(135_000);
    expect(clean.length).toBeGreaterThan(1e7);
    for (const input of [...hostile, clean]) expectLinearTime(redactText, input);
    expect(redactText('-----BEGIN PRIVATE KEY-----\n' + 'A'.repeat(1e6))).toBe('[REDACTED:private-key]');
    expect(redactText('password='.repeat(1.1e5))).toBe('password=[REDACTED:password]');
  });
});

describe('redactJsonValue', () => {
  it('masks strings anywhere in objects and arrays and leaves other values and the input alone', () => {
    const input = {
      command: 'export OPENAI_API_KEY=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv && run',
      env: [{ name: 'GH', value: 'ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8' }],
      timeout: 30,
      dryRun: true,
      cwd: null,
    };
    const before = structuredClone(input);
    expect(redactJsonValue(input)).toStrictEqual({
      command: 'export OPENAI_API_KEY=[REDACTED:openai-key] && run',
      env: [{ name: 'GH', value: '[REDACTED:github-token]' }],
      timeout: 30,
      dryRun: true,
      cwd: null,
    });
    expect(input).toStrictEqual(before);
  });

  it('masks a whole string stored under a credential-named key', () => {
    expect(
      redactJsonValue({
        password: 'hunter2',
        db: { apiKey: 'plain', max_tokens: 'many', token: 'string' },
        headers: { Authorization: 'Basic dXNlcjpwYXNz', 'proxy-authorization': 'Bearer abc' },
        aws: { SecretAccessKey: 'short' },
      }),
    ).toStrictEqual({
      password: '[REDACTED:password]',
      db: { apiKey: '[REDACTED:secret]', max_tokens: 'many', token: 'string' },
      headers: { Authorization: 'Basic [REDACTED:basic-auth]', 'proxy-authorization': 'Bearer [REDACTED:bearer-token]' },
      aws: { SecretAccessKey: '[REDACTED:aws-secret-key]' },
    });
  });

  it('keeps its JSON encoding valid when a multi-line key is masked', () => {
    const masked = JSON.stringify(redactJsonValue({ content: `write this:\n${PEM}\n`, path: '/k' }));
    expect(JSON.parse(masked)).toStrictEqual({ content: 'write this:\n[REDACTED:private-key]\n', path: '/k' });
  });

  it('keeps a __proto__ key as an ordinary key', () => {
    const parsed: unknown = JSON.parse('{"__proto__":{"token":"abc"},"x":1}');
    expect(JSON.stringify(redactJsonValue(parsed))).toBe('{"__proto__":{"token":"[REDACTED:secret]"},"x":1}');
  });
});
