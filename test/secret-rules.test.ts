/**
 * The rule table, one positive and one negative case per rule: the positive's secret must be gone
 * and the rule's placeholder present; the negative, a look-alike that is not a credential, must come
 * back unchanged. Then the benign values every transcript is full of, and hostile input.
 */
import { describe, expect, it } from 'vitest';
import { redactText, redactTextByEveryRule } from '../src/core/redact.js';
import { mulberry32 } from '../bench/prng.js';
import { SECRET_RULES } from '../src/core/secret-rules.js';
import { AN, B64, HEX, rnd, SECRET_CASES as CASES } from '../bench/secret-suite.js';
import { expectLinearTime } from './support/linear-time.js';

/**
 * A deterministic "random" sequence of a test body's own, so filtering with -t or shuffling never
 * changes that test's input (the shared `rnd` of bench/secret-suite.ts moves with whatever ran
 * before it).
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
      // A rule that masks a pair names each half (`emits`).
      expect([rule.id, ...(rule.emits ?? [])].some((name) => masked.includes(`[REDACTED:${name}]`)), masked).toBe(true);
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

describe('credential pairs: a secret without a prefix, found by the id next to it', () => {
  const sid = 'AC3f9c2a7d41e84b0c9d5a6e1f7b2c8d40';
  const token = '9b1e7c0d2a4f6e8b0c3d5f7a9e1b2c4d';
  const id = 'AKIA4J7QX2MZP5RT6W3Y';
  const secret = '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';

  it.each<[string, string]>([
    ['Twilio client, positional', `Client("${sid}", "${token}")`],
    ['Twilio client over lines', `client = Client(\n    '${sid}',\n    '${token}',\n)`],
    ['Twilio basic auth', `curl -X POST https://api.twilio.com -u ${sid}:${token}`],
    ['Twilio named', `account_sid=${sid} auth_token=${token}`],
    ['Twilio CSV', `${sid},${token}`],
  ])('%s: the auth token goes, the SID stays', (_name, text) => {
    const masked = redactText(text);
    expect(masked).not.toContain(token);
    expect(masked).toContain(sid);
  });

  it.each<[string, string]>([
    ['aws configure, positional', `aws configure set ${id} ${secret}`],
    ['credentials CSV row', `me,${id},${secret}`],
    ['code', `boto3.client("s3", "${id}", "${secret}")`],
    ['labelled', `key ${id} secret: ${secret}`],
  ])('%s: both halves go', (_name, text) => {
    const masked = redactText(text);
    expect(masked).not.toContain(secret);
    expect(masked).not.toContain(id);
    expect(masked).toContain('[REDACTED:aws-secret-key]');
  });

  it('leaves a SID or key id next to things that are not their secret', () => {
    const benign = [
      `sids ${sid}, AC0a1b2c3d4e5f60718293a4b5c6d7e8f9`,
      `${sid} checksum d41d8cd98f00b204e9800998ecf8427e`,
      `${sid} 0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d`,
      `call ${sid} now: ${token.toUpperCase()}`,
      `${id} sha1 da39a3ee5e6b4b0d3255bfef95601890afd80709`,
      `${id} and ${'a'.repeat(40)}`,
    ];
    for (const text of benign) {
      const masked = redactText(text);
      expect(masked).not.toContain('[REDACTED:twilio-auth-token]');
      expect(masked).not.toContain('[REDACTED:aws-secret-key]');
    }
    expect(redactText(`${sid} checksum d41d8cd98f00b204e9800998ecf8427e`)).toBe(`${sid} checksum d41d8cd98f00b204e9800998ecf8427e`);
  });
});

describe('a key split by a line break (wrapped terminal output)', () => {
  const key = `sk-proj-${rnd(AN, 60)}3x`;
  const gh = `ghp_${rnd(AN, 34)}7q`;

  it.each<[string, number]>([
    ['in its body', 30],
    ['right after its prefix', 8],
    ['inside its prefix', 5],
    ['after its first two characters', 2],
  ])('%s: masked whole, the line structure kept', (_name, at) => {
    for (const nl of ['\n', '\r\n']) {
      const text = `$ echo $OPENAI_API_KEY\n${key.slice(0, at)}${nl}${key.slice(at)}\n$ next`;
      const masked = redactText(text);
      expect(masked, masked).not.toContain(key.slice(at, at + 12));
      if (at > 9) expect(masked).not.toContain(key.slice(9, at));
      expect(masked).toContain('[REDACTED:openai-key]');
      expect(masked.split('\n')).toHaveLength(4);
      expect(masked.endsWith('\n$ next')).toBe(true);
    }
  });

  it('works for every prefixed kind, e.g. a GitHub token and an AWS key id', () => {
    expect(redactText(`${gh.slice(0, 20)}\n${gh.slice(20)}`)).toBe('[REDACTED:github-token]\n');
    expect(redactText('AKIAIOSF\nODNN7EXAMPLE done')).toBe('[REDACTED:aws-access-key]\n done');
  });

  it('a real-length key wrapped twice by an 80-column terminal: masked whole, every line kept', () => {
    const long = 'sk-proj-4gaSMyqces2QkkwcsCK4S8SEIAmmGQiwcS8koSo6mmEeQSEY8Sm4KGEuSUCSC448Mk8gci2SEAosiY' +
      '4Cw8RqW0WmGCOCsEoUYwiKiyEeyd06eqEo6icGMEwkg2KWowao8Go846i2aQuSoammUk2iwOQUKmYw';
    const wrapped = `OPENAI_API_KEY=${long}`.match(/.{1,80}/g)!;
    expect(wrapped).toHaveLength(3);
    for (const nl of ['\n', '\r\n']) {
      const masked = redactText(`$ cat .env\n${wrapped.join(nl)}\n$ next`);
      expect(masked).toBe(`$ cat .env\nOPENAI_API_KEY=[REDACTED:openai-key]${nl}${nl}\n$ next`);
    }
  });

  it('keeps joining only while the key goes on: a key that ends mid-line is not glued to the lines after', () => {
    const text = `${key.slice(0, 40)}\n${key.slice(40)} done\n${gh.slice(0, 20)}7Zq9\nREADME`;
    expect(redactText(text)).toBe('[REDACTED:openai-key]\n done\n[REDACTED:github-token]\nREADME');
  });

  it('does not glue a key that ends its line to the next line\'s word', () => {
    for (const next of ['Makefile', 'README', 'done', 'export FOO=1']) {
      const text = `${key}\n${next}`;
      expect(redactText(text)).toBe(`[REDACTED:openai-key]\n${next}`);
    }
  });

  it('leaves prose and code broken over lines alone', () => {
    const text = ['The sk-', 'learn library', 'ghp_', 'is a prefix', 'AKIA', 'alone', 'const a = b', 'c.d()', 'AKIAIOSF', 'ODNN'].join('\n');
    expect(redactText(text)).toBe(text);
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
    `AC${'0'.repeat(32)} `, `AC${'a'.repeat(32)}, `, 'AKIAIOSFODNN7EXAMPLE ', 'sk-pr\noj-', 'a\nb', 'AKIA\n', 'ghp_x\n1',
  ];
  it.each(units)('%j repeated over 1 MB finishes in linear time', (unit) => {
    expectLinearTime(redactText, unit.repeat(Math.ceil(1_000_000 / unit.length)));
  });
});

/**
 * Expects `redactText` to mask each text exactly as every rule of the table run over the whole text
 * does (`redactTextByEveryRule`); returns how many texts that masked something.
 */
function expectMaskedAsByEveryRule(texts: readonly string[]): number {
  let masked = 0;
  for (const text of texts) {
    const expected = redactTextByEveryRule(text);
    expect(redactText(text), text).toBe(expected);
    if (expected !== text) masked++;
  }
  return masked;
}

describe('a rule tried only where its keywords stand (anchored)', () => {
  /** Texts built from the pieces the assignment rule is made of, in random case and order. */
  function assignmentTexts(seed: number, count: number): string[] {
    const random = mulberry32(seed);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const keys = ['password', 'passwd', 'passphrase', 'pass', 'db_pass', 'x.pwd', 'pwd', 'secret', 'secret_key', 'secret-key', 'api_key', 'apikey', 'API-KEY', 'private_key', 'access-key', 'token', 'auth_token', '_key', 'my.key', 'monkey', 'bypass', 'x-auth', '.auth', 'author', 'tokens', 'TOKEN'];
    const seps = ['=', ': ', ':', ' = ', '":"', "='", '=\\"', ' ', '\n', '=>', ''];
    const values = [() => randomValue(random, 24), () => 'hunter2', () => '"quoted value"', () => `'${randomValue(random, 12)}'`, () => `\\"${randomValue(random, 16)}\\"`, () => '[REDACTED:secret]', () => ''];
    const filler = [' ', '\n', ', ', '; ', ' and ', '(', ')', '{', '}', ' sk-proj-', 'ghp_', 'Bearer ', '?x=1&', '&'];
    const texts: string[] = [];
    for (let t = 0; t < count; t++) {
      let text = '';
      const pieces = 1 + Math.floor(random() * 6);
      for (let p = 0; p < pieces; p++) {
        const key = pick(keys);
        const cased = random() < 0.3 ? key.toUpperCase() : random() < 0.2 ? key[0]!.toUpperCase() + key.slice(1) : key;
        text += pick(filler) + cased + pick(seps) + pick(values)();
      }
      texts.push(text);
    }
    return texts;
  }

  function randomValue(random: () => number, n: number): string {
    let out = '';
    for (let i = 0; i < n; i++) out += AN[Math.floor(random() * AN.length)];
    return out;
  }

  it('masks exactly what every rule scanning the whole text masks', () => {
    const texts = [...assignmentTexts(7, 4000), ...Object.values(CASES).flatMap((c) => [c.positive, c.negative])];
    const masked = expectMaskedAsByEveryRule(texts);
    // The texts exercise the rule: most hold something it masks, some hold nothing it masks.
    expect(masked).toBeGreaterThan(texts.length / 2);
    expect(masked).toBeLessThan(texts.length);
  });
});

describe('the keyword scan that picks the rules to run', () => {
  /** Each positive case in random letter case, at a random place among words, CJK and emoji. */
  function keywordTexts(seed: number): string[] {
    const random = mulberry32(seed);
    const filler = ['', ' ', 'data ', 'be ', 'make ', '编辑 ', '🙂', 'x', '\n', 'ac', 'sk', 'BE'];
    const pick = (): string => filler[Math.floor(random() * filler.length)]!;
    const texts: string[] = [];
    for (const { positive } of Object.values(CASES)) {
      for (let variant = 0; variant < 12; variant++) {
        const flip = variant === 0 ? 0 : random() * 0.3;
        let cased = '';
        for (const ch of positive) cased += random() < flip ? (ch === ch.toLowerCase() ? ch.toUpperCase() : ch.toLowerCase()) : ch;
        texts.push(pick() + pick() + cased + pick());
      }
    }
    return texts;
  }

  it('finds every keyword in any letter case and at any place, so no rule that would mask is skipped', () => {
    const texts = keywordTexts(11);
    const masked = expectMaskedAsByEveryRule(texts);
    // Most variants still hold a credential (the case-insensitive rules match whatever the case).
    expect(masked).toBeGreaterThan(texts.length / 2);
  });
});
