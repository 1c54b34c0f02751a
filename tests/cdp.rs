//! Just enough of the Chrome DevTools Protocol to drive headless Chromium like
//! a person: load a page, read it, click at an element's centre with real mouse
//! events, and let downloads land in a folder. The protocol runs over the pipe
//! pair Chromium opens on file descriptors 3 and 4 (`--remote-debugging-pipe`),
//! so no port, no websocket and no extra crate.

#![cfg(unix)]

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub struct Chromium {
    child: Child,
    to: std::io::PipeWriter,
    from: BufReader<std::io::PipeReader>,
    next_id: u64,
    session: String,
}

impl Chromium {
    /// Starts the browser with a fresh profile under `tmp`, opens one tab and
    /// sends its downloads to `downloads`.
    pub fn launch(browser: &Path, tmp: &Path, downloads: &Path) -> Chromium {
        let (child_reads, to) = std::io::pipe().expect("pipe");
        let (from, child_writes) = std::io::pipe().expect("pipe");
        let (r, w) = (child_reads.as_raw_fd(), child_writes.as_raw_fd());
        let mut command = Command::new(browser);
        command
            .args(["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"])
            .arg("--remote-debugging-pipe")
            .arg(format!("--user-data-dir={}", tmp.join("profile-cdp").display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(tmp.join("cdp.stderr")).expect("stderr file"))
            .process_group(0);
        // SAFETY: only async-signal-safe calls between fork and exec: the
        // browser reads commands from fd 3 and writes replies to fd 4.
        unsafe {
            command.pre_exec(move || {
                // Out of the way first, in case r or w is already 3 or 4.
                let (r2, w2) = (libc::fcntl(r, libc::F_DUPFD, 10), libc::fcntl(w, libc::F_DUPFD, 10));
                if r2 < 0 || w2 < 0 || libc::dup2(r2, 3) < 0 || libc::dup2(w2, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().expect("start Chromium");
        drop((child_reads, child_writes));
        let mut browser = Chromium { child, to, from: BufReader::new(from), next_id: 0, session: String::new() };
        let target = browser.call(None, "Target.createTarget", json!({ "url": "about:blank" }));
        let target = target["targetId"].as_str().expect("a target id").to_string();
        let attached = browser.call(None, "Target.attachToTarget", json!({ "targetId": target, "flatten": true }));
        browser.session = attached["sessionId"].as_str().expect("a session id").to_string();
        let path = downloads.canonicalize().expect("download folder");
        browser.call(None, "Browser.setDownloadBehavior", json!({ "behavior": "allow", "downloadPath": path }));
        browser
    }

    /// Sends one command (to the tab unless `session` is `None`: the browser)
    /// and returns its result, skipping the events in between.
    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        let mut bytes = serde_json::to_vec(&message).expect("json");
        bytes.push(0);
        self.to.write_all(&bytes).and_then(|()| self.to.flush()).expect("send to Chromium");
        loop {
            let mut reply = Vec::new();
            let n = self.from.read_until(0, &mut reply).expect("read from Chromium");
            assert!(n > 0, "Chromium closed the pipe during {method}");
            reply.pop();
            let reply: Value = serde_json::from_slice(&reply).expect("a JSON message");
            if reply["id"] == json!(id) {
                assert!(reply.get("error").is_none(), "{method}: {}", reply["error"]);
                return reply["result"].clone();
            }
        }
    }

    fn tab(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.call(Some(&session), method, params)
    }

    pub fn navigate(&mut self, url: &str) {
        self.tab("Page.navigate", json!({ "url": url }));
    }

    /// The value of a JavaScript expression in the page.
    pub fn eval(&mut self, expression: &str) -> Value {
        let result = self.tab("Runtime.evaluate", json!({ "expression": expression, "returnByValue": true }));
        assert!(result.get("exceptionDetails").is_none(), "{expression}: {}", result["exceptionDetails"]);
        result["result"]["value"].clone()
    }

    /// Waits until `expression` is true in the page.
    pub fn wait_for(&mut self, expression: &str, timeout: Duration) {
        let start = Instant::now();
        while self.eval(&format!("Boolean({expression})")) != json!(true) {
            assert!(start.elapsed() < timeout, "waited {timeout:?} for {expression}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A left click at the centre of the first element `selector` matches, as
    /// the mouse does it: pressed, then released.
    pub fn click(&mut self, selector: &str) {
        let selector = serde_json::to_string(selector).expect("json");
        let centre = self.eval(&format!(
            "(() => {{ const e = document.querySelector({selector}); if (!e) return null; \
             e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect(); \
             return [r.x + r.width / 2, r.y + r.height / 2]; }})()"
        ));
        let (x, y) = (centre[0].as_f64(), centre[1].as_f64());
        let (Some(x), Some(y)) = (x, y) else { panic!("nothing matches {selector}") };
        for kind in ["mousePressed", "mouseReleased"] {
            let event = json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 });
            self.tab("Input.dispatchMouseEvent", event);
        }
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", self.child.id())]).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
