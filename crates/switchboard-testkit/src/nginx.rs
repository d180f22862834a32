//! A real `nginx` (Debian's package) on a free loopback port, balancing round-robin over
//! gateway replicas, as the tests of several replicas put it in front of them: no
//! buffering (streams pass as they come), the client's `Host` passed on, and a request
//! tried on the next replica only when connecting failed (nginx never resends a POST that
//! reached a replica). Open-source nginx cannot probe `/readyz`: the test plays the health
//! checker and changes the list with [`Nginx::set_upstreams`] (a reload: requests under
//! way finish on the old workers). Its files live in a folder of its own under the
//! system's temporary directory, removed when dropped with the process. Without `nginx`
//! on the PATH the test fails and says how to install it (`scripts/test` does).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a start or a reload may take to show.
const TIMEOUT: Duration = Duration::from_secs(20);

/// A running `nginx` master process and its workers.
#[derive(Debug)]
pub struct Nginx {
    /// `http://127.0.0.1:PORT`
    pub base: String,
    port: u16,
    prefix: PathBuf,
    child: Child,
}

impl Nginx {
    /// Starts nginx in front of `upstreams` (`127.0.0.1:PORT` each) and waits until it
    /// answers.
    pub fn start(upstreams: &[String]) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|address| address.port())
            .unwrap();
        let prefix = std::env::temp_dir().join(format!("switchboard-nginx-{port}"));
        std::fs::create_dir_all(&prefix).unwrap();
        write_config(&prefix, port, upstreams);
        let child = Command::new("nginx")
            .arg("-p")
            .arg(&prefix)
            .args(["-c", "nginx.conf", "-e", "error.log"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| {
                panic!("cannot start nginx ({error}); install it with `apt-get install nginx` (scripts/test does)")
            });
        let nginx = Self {
            base: format!("http://127.0.0.1:{port}"),
            port,
            prefix,
            child,
        };
        let deadline = Instant::now() + TIMEOUT;
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "nginx did not listen on {port} within {TIMEOUT:?}: {}",
                nginx.error_log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        nginx
    }

    /// Balances over `upstreams` from now on: the configuration is written again and nginx
    /// reloaded; returns once new workers run it.
    pub fn set_upstreams(&self, upstreams: &[String]) {
        let before = self.workers();
        write_config(&self.prefix, self.port, upstreams);
        let status = Command::new("kill")
            .args(["-HUP", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let deadline = Instant::now() + TIMEOUT;
        while self.workers().iter().all(|worker| before.contains(worker)) {
            assert!(
                Instant::now() < deadline,
                "nginx did not reload within {TIMEOUT:?}: {}",
                self.error_log()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// What nginx logged (warnings and errors).
    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.prefix.join("error.log")).unwrap_or_default()
    }

    fn workers(&self) -> Vec<String> {
        let children = format!(
            "/proc/{}/task/{}/children",
            self.child.id(),
            self.child.id()
        );
        std::fs::read_to_string(children)
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    }
}

/// nginx's configuration for these upstreams, in `prefix`.
fn write_config(prefix: &std::path::Path, port: u16, upstreams: &[String]) {
    assert!(!upstreams.is_empty(), "nginx needs one upstream at least");
    let servers: String = upstreams
        .iter()
        .map(|address| format!("        server {address} max_fails=0;\n"))
        .collect();
    let folder = prefix;
    let prefix = prefix.display();
    let config = format!(
        r#"daemon off;
master_process on;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{
    worker_connections 4096;
}}
http {{
    access_log off;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    upstream gateways {{
{servers}    }}
    server {{
        listen 127.0.0.1:{port};
        client_max_body_size 16m;
        location / {{
            proxy_pass http://gateways;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_read_timeout 300s;
            proxy_next_upstream error;
        }}
    }}
}}
"#
    );
    std::fs::write(folder.join("nginx.conf"), config).unwrap();
}

impl Drop for Nginx {
    /// Asks the master to stop (SIGTERM: it ends its workers, those of older reloads too,
    /// and exits); a master killed outright would leave its workers running.
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + TIMEOUT;
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.prefix);
    }
}
