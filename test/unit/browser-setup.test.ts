/**
 * Issue 34: the browser tests on every platform. The bundled Chromium (@sparticuz/chromium) is a Linux
 * x64 build; elsewhere they start a Chrome, Edge or Chromium installed in its usual place
 * (test/helpers/browser.ts), or say what to do.
 */
import { installedBrowser, installedBrowsers } from '../helpers/browser'

const only = (file: string) => (candidate: string) => candidate === file

test('macOS: Chrome, then Edge, then Chromium, in /Applications and then in ~/Applications', () => {
  const looked = installedBrowsers('darwin', {}, '/Users/dev')
  expect(looked[0]).toBe('/Applications/Google Chrome.app/Contents/MacOS/Google Chrome')
  expect(looked).toContain('/Users/dev/Applications/Microsoft Edge.app/Contents/MacOS/Microsoft Edge')
  expect(installedBrowser('darwin', 'arm64', {}, '/Users/dev', only('/Applications/Microsoft Edge.app/Contents/MacOS/Microsoft Edge')))
    .toBe('/Applications/Microsoft Edge.app/Contents/MacOS/Microsoft Edge')
})

test('Windows: Chrome or Edge (always there) under the user\'s and the machine\'s program folders', () => {
  const env = { LOCALAPPDATA: 'C:\\Users\\dev\\AppData\\Local', PROGRAMFILES: 'C:\\Program Files', 'PROGRAMFILES(X86)': 'C:\\Program Files (x86)' }
  const looked = installedBrowsers('win32', env, 'C:\\Users\\dev')
  expect(looked).toContain('C:\\Program Files\\Google\\Chrome\\Application\\chrome.exe')
  expect(looked).toContain('C:\\Users\\dev\\AppData\\Local\\Google\\Chrome\\Application\\chrome.exe')
  const edge = 'C:\\Program Files (x86)\\Microsoft\\Edge\\Application\\msedge.exe'
  expect(installedBrowser('win32', 'x64', env, 'C:\\Users\\dev', only(edge))).toBe(edge)
})

test('Linux arm64: a distribution\'s Chromium; none found names where it looked and CHROMIUM_PATH', () => {
  expect(installedBrowser('linux', 'arm64', {}, '/home/dev', only('/usr/bin/chromium-browser'))).toBe('/usr/bin/chromium-browser')
  expect(() => installedBrowser('linux', 'arm64', {}, '/home/dev', () => false))
    .toThrow(/Linux x64 build, and no installed Chrome, Edge or Chromium was found on linux-arm64 \(looked for \/usr\/bin\/chromium, .*\): install one, or set CHROMIUM_PATH/)
})
