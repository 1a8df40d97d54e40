// The admin API's contract, checked two ways:
//  1. docs/openapi.json is a valid OpenAPI 3.1 document (@apidevtools/swagger-parser);
//  2. every answer the API test suites receive matches the document: the
//     suites run (WEBHOOKER_TESTS, the C++ test binary) with
//     WEBHOOKER_API_ANSWERS set, so their clients record each answer
//     (tests/support/test_server.cpp); each is then found in the document by
//     method, path and status, and its JSON body validated against that
//     response's schema (ajv, JSON Schema 2020-12 as OpenAPI 3.1 uses).
// An answer on a path and method the document lacks fails, except the 404s
// and 405s the suites ask for on purpose (unknown routes and methods), and so
// does an operation no suite received a success answer (2xx) from.
// tests/integration/openapi_test.cpp checks the document lists every route.
//
// Exit codes: 0 passed, 1 failed, 77 skipped (no node_modules: scripts/install-deps).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SKIP = 77;
const here = path.dirname(fileURLToPath(import.meta.url));
// The suites that drive the admin API through TestServer's clients.
const SUITES = ['admin_api', 'history', 'redrive', 'webhook_stats', 'routing', 'webhook_settings',
                'hostile_input', 'openapi', 'access', 'portal', 'pull', 'node_summary', 'webhook_list'];

let SwaggerParser, Ajv2020;
try {
  SwaggerParser = (await import('@apidevtools/swagger-parser')).default;
  Ajv2020 = (await import('ajv/dist/2020.js')).default;
} catch (e) {
  console.log(`skipped: the validators are not installed in ${here}/node_modules (run scripts/install-deps)`);
  process.exit(SKIP);
}
const sourceDir = process.env.WEBHOOKER_SOURCE_DIR;
const testsBin = process.env.WEBHOOKER_TESTS;
if (!sourceDir || !testsBin) {
  console.error('WEBHOOKER_SOURCE_DIR and WEBHOOKER_TESTS must be set; run through meson test');
  process.exit(1);
}
const documentFile = path.join(sourceDir, 'docs', 'openapi.json');

let failed = 0;
let passed = 0;
function fail(message) {
  failed++;
  console.log('FAIL ' + message);
}

// 1. The document itself.
try {
  await SwaggerParser.validate(JSON.parse(fs.readFileSync(documentFile, 'utf8')));
  passed++;
} catch (e) {
  fail(`docs/openapi.json is not a valid OpenAPI document: ${e.message}`);
}
const document = await SwaggerParser.dereference(JSON.parse(fs.readFileSync(documentFile, 'utf8')));

// 2. The answers.
const answersFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'openapi-')), 'answers.jsonl');
// One process per suite, as meson runs them.
for (const suite of SUITES) {
  await new Promise((resolve) => {
    execFile(testsBin, [`--source-file=*/integration/${suite}_test.cpp`],
      { env: { ...process.env, WEBHOOKER_API_ANSWERS: answersFile }, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) fail(`the ${suite} suite failed on its own:\n${stdout}${stderr}`);
        resolve();
      });
  });
}
const answers = fs.existsSync(answersFile)
  ? fs.readFileSync(answersFile, 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l))
  : [];
if (answers.length < 500) fail(`only ${answers.length} answers were recorded`);

// The document's paths as patterns: {name} is one segment.
const operations = Object.entries(document.paths).map(([template, item]) => ({
  template,
  item,
  pattern: new RegExp('^' + template.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+') + '$'),
}));
const ajv = new Ajv2020({ strict: false, allErrors: true });
const validators = new Map();
function validatorFor(key, schema) {
  if (!validators.has(key)) validators.set(key, ajv.compile(schema));
  return validators.get(key);
}

const seen = new Set();
const problems = new Map();  // one line per distinct problem, with a count
function problem(text) {
  problems.set(text, (problems.get(text) || 0) + 1);
}
for (const a of answers) {
  const pathOnly = a.path.split('?')[0];
  const method = (a.method === 'HEAD' ? 'GET' : a.method).toLowerCase();
  // The console's static files are not API (the openapi suite leaves them out too).
  if (method === 'get' && /^\/(assets\/.+|[^/]+\.html)?$/.test(pathOnly)) continue;
  const op = operations.find((o) => o.pattern.test(pathOnly) && o.item[method]);
  if (!op) {
    if (a.status !== 404 && a.status !== 405 && a.status !== 401 && a.status !== 400)
      problem(`${a.method} ${pathOnly} answered ${a.status} but the document has no such operation`);
    continue;
  }
  const responses = op.item[method].responses;
  const response = responses[String(a.status)] || responses.default;
  if (!response) {
    problem(`${a.method} ${op.template}: status ${a.status} is not in the document`);
    continue;
  }
  seen.add(`${method} ${op.template} ${a.status}`);
  const content = response.content || {};
  if (Object.keys(content).length === 0) {
    if (a.body !== '') problem(`${a.method} ${op.template} ${a.status}: a body where the document has none`);
    continue;
  }
  const mediaType = (a.content_type || '').split(';')[0].trim();
  const media = content[mediaType] || content['*/*'];
  if (!media) {
    problem(`${a.method} ${op.template} ${a.status}: ${mediaType} is not among ${Object.keys(content)}`);
    continue;
  }
  if (mediaType !== 'application/json') continue;
  let body;
  try {
    body = JSON.parse(a.body);
  } catch (e) {
    problem(`${a.method} ${op.template} ${a.status}: the body is not JSON`);
    continue;
  }
  const validate = validatorFor(`${method} ${op.template} ${a.status} ${mediaType}`, media.schema || {});
  if (!validate(body)) {
    problem(`${a.method} ${op.template} ${a.status}: ${ajv.errorsText(validate.errors)}`);
  }
}
for (const [text, count] of problems) fail(`${text} (${count} answers)`);
passed += answers.length - [...problems.values()].reduce((a, b) => a + b, 0);

// Every operation of the document (so every route: openapi_test.cpp checks
// they are the same set) must have had a success answer checked against its
// schema; a route added without a test that reaches it fails here.
const unanswered = [];
for (const o of operations)
  for (const method of Object.keys(o.item))
    if (method !== 'parameters' && ![...seen].some((s) => s.startsWith(`${method} ${o.template} 2`)))
      unanswered.push(`${method.toUpperCase()} ${o.template}`);
if (unanswered.length)
  fail(`no suite had a success answer (2xx) checked from: ${unanswered.join(', ')}`);
else
  passed++;
const operationCount = operations.reduce(
  (n, o) => n + Object.keys(o.item).filter((m) => m !== 'parameters').length, 0);
console.log(`${answers.length} answers checked against docs/openapi.json; ` +
            `${operationCount - unanswered.length} of its ${operationCount} operations ` +
            `had a success answer checked`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
