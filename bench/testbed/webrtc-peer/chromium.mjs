// Debian's Chromium, headless, in a network namespace, driven over --remote-debugging-pipe.
//
// The DevTools protocol (CDP) over the pipe is JSON messages separated by NUL bytes: the browser
// reads commands on its fd 3 and writes replies and events on its fd 4. That is all a driver
// needs, so this module speaks it directly (~200 lines, no npm dependency, nothing downloaded):
// one browser process per launch, pages as flattened target sessions, Runtime.evaluate with
// awaitPromise for page scripts, console messages and crashes as events.
//
//   const browser = await launchChromium({ netns: 'pdb1-snd', userDataDir, args: [...] });
//   const page = await browser.newPage('file:///.../peer.html');
//   const v = await page.evaluate('peer.answer(' + JSON.stringify(offer) + ')');
//   await browser.close();
//
// Contract: evaluate() resolves with the script's value (returned by value, so JSON-able), or
// rejects with the page's exception text; a browser that exits rejects every pending call. The
// module never installs signal handlers: the caller owns process lifetime (close() on exit).

import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

// Flags every launch gets. The first group is what this machine needs (the env notes): no
// sandbox as root, no GPU, and no background network services, whose lookups a closed network
// refuses at every start. The second keeps a headless page running at full speed although nobody
// looks at it. The third is WebRTC: fake capture devices accepted without a prompt, playback
// without a user gesture, host candidates as real addresses (not mDNS names, which no peer in
// another namespace could resolve) and no QUIC.
export const BASE_FLAGS = [
  '--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-default-apps', '--disable-extensions', '--no-default-browser-check',
  '--disable-domain-reliability', '--disable-client-side-phishing-detection', '--mute-audio',
  '--disable-background-timer-throttling', '--disable-renderer-backgrounding',
  '--disable-backgrounding-occluded-windows', '--disable-dev-shm-usage',
  '--use-fake-ui-for-media-stream', '--autoplay-policy=no-user-gesture-required',
  '--disable-features=WebRtcHideLocalIpsWithMdns,MediaRouter,OptimizationHints,Translate',
];

class CdpPipe extends EventEmitter {
  constructor(writable, readable) {
    super();
    this.writable = writable;
    this.nextId = 1;
    this.pending = new Map();
    this.buffered = [];
    readable.on('data', (chunk) => this.onData(chunk));
    readable.on('close', () => this.failAll(new Error('browser pipe closed')));
    readable.on('error', () => {});
    writable.on('error', () => {});
  }

  onData(chunk) {
    let start = 0;
    for (let i = chunk.indexOf(0); i !== -1; i = chunk.indexOf(0, start)) {
      this.buffered.push(chunk.subarray(start, i));
      const text = Buffer.concat(this.buffered).toString('utf8');
      this.buffered = [];
      start = i + 1;
      this.dispatch(JSON.parse(text));
    }
    if (start < chunk.length) this.buffered.push(chunk.subarray(start));
  }

  dispatch(msg) {
    if (msg.id !== undefined) {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.error) p.reject(new Error(`${p.method}: ${msg.error.message}`));
      else p.resolve(msg.result);
    } else {
      this.emit('event', msg);
    }
  }

  send(method, params = {}, sessionId = undefined) {
    const id = this.nextId++;
    const msg = { id, method, params };
    if (sessionId) msg.sessionId = sessionId;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method });
      this.writable.write(JSON.stringify(msg) + '\0');
    });
  }

  failAll(err) {
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
    this.emit('closed');
  }
}

/** One tab: a flattened CDP session on a page target. */
export class Page extends EventEmitter {
  constructor(cdp, targetId, sessionId) {
    super();
    this.cdp = cdp;
    this.targetId = targetId;
    this.sessionId = sessionId;
  }

  send(method, params = {}) {
    return this.cdp.send(method, params, this.sessionId);
  }

  /** Evaluates EXPR (a string of JavaScript) in the page; awaits a promise; returns its value. */
  async evaluate(expr) {
    const r = await this.send('Runtime.evaluate', {
      expression: expr, awaitPromise: true, returnByValue: true, userGesture: true,
    });
    if (r.exceptionDetails) {
      const d = r.exceptionDetails;
      throw new Error(`page: ${d.exception?.description || d.text}`);
    }
    return r.result.value;
  }

  /** Calls FN (a function) in the page with JSON-able ARGS. */
  call(fn, ...args) {
    return this.evaluate(`(${fn.toString()})(...${JSON.stringify(args)})`);
  }

  /** Waits until the page shows URL, fully loaded (a tab opened at URL may still be loading). */
  async waitLoaded(url, timeoutMs = 20000) {
    const deadline = Date.now() + timeoutMs;
    const check = `location.href === ${JSON.stringify(url)} && document.readyState === 'complete'`;
    while (!(await this.evaluate(check).catch(() => false))) {
      if (Date.now() > deadline) throw new Error(`${url} did not load within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 30));
    }
  }

  /** Navigates and waits for the load event. */
  async goto(url, timeoutMs = 15000) {
    const loaded = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`load of ${url} timed out`)), timeoutMs);
      this.once('Page.loadEventFired', () => { clearTimeout(timer); resolve(); });
    });
    const r = await this.send('Page.navigate', { url });
    if (r.errorText) throw new Error(`navigate ${url}: ${r.errorText}`);
    await loaded;
  }
}

/** A browser process in a namespace (or in ours with netns null). */
export class Browser extends EventEmitter {
  constructor(child, cdp, userDataDir, ownsDir) {
    super();
    this.child = child;
    this.cdp = cdp;
    this.userDataDir = userDataDir;
    this.ownsDir = ownsDir;
    this.pages = new Map();
    this.exited = new Promise((resolve) => child.once('exit', (code, sig) => resolve({ code, sig })));
    cdp.on('event', (msg) => {
      const page = msg.sessionId && this.pages.get(msg.sessionId);
      if (page) {
        page.emit(msg.method, msg.params);
        if (msg.method === 'Runtime.consoleAPICalled') {
          const text = msg.params.args.map((a) => (a.value !== undefined ? a.value : a.description)).join(' ');
          page.emit('console', text, msg.params.type);
        } else if (msg.method === 'Inspector.targetCrashed') {
          page.emit('crashed');
        }
      } else {
        this.emit(msg.method, msg.params);
      }
    });
  }

  get pid() { return this.child.pid; }

  /** CPU seconds (user + system) used so far by the browser and all its helper processes. */
  cpuSeconds() {
    const tick = 100; // USER_HZ: 100 on every Linux this runs on (sysconf(_SC_CLK_TCK)).
    let total = 0;
    for (const name of fs.readdirSync('/proc')) {
      if (!/^[0-9]+$/.test(name)) continue;
      let stat;
      try { stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8'); } catch { continue; }
      // Fields after the command name (which may hold spaces): state ppid pgrp ... utime stime.
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(f[2]) === this.child.pid) total += (Number(f[11]) + Number(f[12])) / tick;
    }
    return total;
  }

  /**
   * A tab at URL (default about:blank) with Page and Runtime events on, loaded. The first call
   * takes the tab the browser started with (launchChromium's `url`), later ones open new tabs
   * straight at URL: each renderer process started costs ~1 s of CPU, seconds on a loaded machine.
   */
  async newPage(url = 'about:blank', timeoutMs = 20000) {
    let targetId = null;
    let shows = url;
    if (!this.initialTaken) {
      this.initialTaken = true;
      const { targetInfos } = await this.cdp.send('Target.getTargets');
      const first = targetInfos.find((t) => t.type === 'page');
      if (first) ({ targetId, url: shows } = first);
    }
    if (!targetId) ({ targetId } = await this.cdp.send('Target.createTarget', { url }));
    const { sessionId } = await this.cdp.send('Target.attachToTarget', { targetId, flatten: true });
    const page = new Page(this.cdp, targetId, sessionId);
    this.pages.set(sessionId, page);
    await Promise.all([page.send('Page.enable'), page.send('Runtime.enable'), page.send('Inspector.enable')]);
    if (shows === url) await page.waitLoaded(url, timeoutMs);
    else await page.goto(url, timeoutMs);
    return page;
  }

  /** Asks the browser to close, then kills it after GRACE_MS; removes its profile if ours. */
  async close(graceMs = 3000) {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.cdp.send('Browser.close').catch(() => {});
      const timer = setTimeout(() => { try { process.kill(-this.child.pid, 'SIGKILL'); } catch {} }, graceMs);
      await this.exited;
      clearTimeout(timer);
    }
    if (this.ownsDir) fs.rmSync(this.userDataDir, { recursive: true, force: true });
  }
}

/**
 * Starts Chromium headless. Options:
 *   netns        network namespace to run it in (`ip netns exec`), or null for ours
 *   args         extra command-line flags (fake capture files, field trials, ...)
 *   url          the page the first tab opens (newPage(url) then takes that tab)
 *   userDataDir  profile directory (default: a fresh one under the OS temp dir, removed on close)
 *   logFile      where the browser's stdout/stderr go (default: discarded)
 *   timeoutMs    how long to wait for the DevTools pipe to answer
 */
export async function launchChromium({ netns = null, args = [], url = 'about:blank', userDataDir = null, logFile = null, timeoutMs = 20000 } = {}) {
  const ownsDir = !userDataDir;
  const dir = userDataDir || fs.mkdtempSync(path.join(os.tmpdir(), 'webrtc-peer-profile-'));
  const flags = [...BASE_FLAGS, `--user-data-dir=${dir}`, '--remote-debugging-pipe', ...args, url];
  const [cmd, argv] = netns ? ['ip', ['netns', 'exec', netns, CHROMIUM, ...flags]] : [CHROMIUM, flags];
  const log = logFile ? fs.openSync(logFile, 'a') : 'ignore';
  // Its own process group, so that close() can end the browser and all its helpers at once.
  const child = spawn(cmd, argv, { stdio: ['ignore', log, log, 'pipe', 'pipe'], detached: true });
  if (logFile) fs.closeSync(log);
  const cdp = new CdpPipe(child.stdio[3], child.stdio[4]);
  const browser = new Browser(child, cdp, dir, ownsDir);
  const ready = cdp.send('Browser.getVersion');
  let timeout;
  const timer = new Promise((_, reject) => {
    timeout = setTimeout(() => reject(new Error(`chromium did not answer within ${timeoutMs} ms (netns ${netns})`)), timeoutMs);
  });
  const exit = browser.exited.then(({ code, sig }) => { throw new Error(`chromium exited at start (code ${code}, signal ${sig}); see ${logFile || 'its log'}`); });
  try {
    browser.version = await Promise.race([ready, timer, exit]);
  } catch (e) {
    await browser.close(500).catch(() => {});
    throw e;
  } finally {
    clearTimeout(timeout);
  }
  return browser;
}
