// Runs the HTTP caching conformance suite (a checkout of http-tests/cache-tests) against a
// cache reachable at BASE, in private-cache mode: the tests a browser's cache is held to
// (browser-only ones included, those for shared caches and CDNs left out). Prints one line
// per test that is not a pass, then the counts, next to the browsers' own results stored in
// the checkout (results/*.json) counted over the same selection.
//
//     node run.mjs CACHE_TESTS_DIR BASE [TEST_ID] [RESULTS_JSON]

import fs from 'fs'
import { pathToFileURL } from 'url'

const [dir, base, only, output] = process.argv.slice(2)
const load = (path) => import(pathToFileURL(`${dir}/${path}`).href)
const tests = (await load('tests/index.mjs')).default
const config = await load('test-engine/client/config.mjs')
const { makeTest, testResults } = await load('test-engine/client/test.mjs')
const { determineTestResult, resultTypes } = await load('test-engine/lib/results.mjs')

const selected = []
for (const suite of tests) {
  for (const test of suite.tests) {
    if (test.cdn_only || test.browser_skip) continue
    if (only && test.id !== only) continue
    if (only) test.dump = true
    selected.push(test)
  }
}

config.setBaseUrl(base)
config.setUseBrowserCache(false)
for (let index = 0; index < selected.length; index += 25) {
  await Promise.all(selected.slice(index, index + 25).map(makeTest))
}

function count (results) {
  const counts = { required: 0, requiredPassed: 0, optimal: 0, optimalPassed: 0 }
  for (const test of selected) {
    const kind = test.kind ?? 'required'
    if (kind === 'check') continue
    const outcome = determineTestResult(tests, test.id, results, false)
    counts[kind] += 1
    if (outcome === resultTypes.pass) counts[`${kind}Passed`] += 1
  }
  return counts
}

for (const test of selected) {
  const outcome = determineTestResult(tests, test.id, testResults, false)
  if (outcome !== resultTypes.pass && outcome !== resultTypes.yes && outcome !== resultTypes.no) {
    const detail = testResults[test.id] === undefined ? 'untested' : JSON.stringify(testResults[test.id]).slice(0, 160)
    console.log(`${outcome[2]}  ${test.id} (${test.kind ?? 'required'}): ${detail}`)
  }
}
const ours = count(testResults)
console.log(`\nsalvo: required ${ours.requiredPassed} of ${ours.required}, optimal ${ours.optimalPassed} of ${ours.optimal}`)
for (const name of ['chrome', 'firefox', 'safari']) {
  const path = `${dir}/results/${name}.json`
  if (!fs.existsSync(path)) continue
  const theirs = count(JSON.parse(fs.readFileSync(path, 'utf8')))
  console.log(`${name}: required ${theirs.requiredPassed} of ${theirs.required}, optimal ${theirs.optimalPassed} of ${theirs.optimal}`)
}
if (output) fs.writeFileSync(output, JSON.stringify(testResults, null, 2))
