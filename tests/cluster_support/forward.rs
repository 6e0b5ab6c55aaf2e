//! A TCP forwarder on a loopback port: the load balancer in front of nodes (a client is moved
//! to another node by switching its target), or a network path to Redis (cut to make a
//! partition).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    To(SocketAddr),
    /// Accept, forward nothing, hold the connection open (a partition).
    Hold,
}

/// Forwards every TCP connection it accepts on a loopback port to a target that can change.
/// Changing the target (or partitioning) cuts every connection made before.
pub struct Forward {
    addr: SocketAddr,
    mode: watch::Sender<Mode>,
    generation: Arc<Mutex<CancellationToken>>,
    stop: CancellationToken,
}

impl Forward {
    /// A forwarder to `target` on a free port.
    pub async fn start(target: SocketAddr) -> Forward {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (mode, rx) = watch::channel(Mode::To(target));
        let generation = Arc::new(Mutex::new(CancellationToken::new()));
        let stop = CancellationToken::new();
        let (g, s) = (generation.clone(), stop.clone());
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    a = listener.accept() => a,
                    _ = s.cancelled() => return,
                };
                let Ok((inbound, _)) = accepted else { continue };
                let cut = g.lock().unwrap().clone();
                let mode = *rx.borrow();
                tokio::spawn(async move {
                    match mode {
                        Mode::Hold => cut.cancelled().await,
                        Mode::To(target) => {
                            let Ok(mut outbound) = TcpStream::connect(target).await else {
                                return;
                            };
                            let mut inbound = inbound;
                            tokio::select! {
                                _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                                _ = cut.cancelled() => {}
                            }
                        }
                    }
                });
            }
        });
        Forward {
            addr,
            mode,
            generation,
            stop,
        }
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn cut(&self) {
        let old = std::mem::replace(
            &mut *self.generation.lock().unwrap(),
            CancellationToken::new(),
        );
        old.cancel();
    }

    /// Sends new connections to `target` and cuts the existing ones.
    pub fn switch(&self, target: SocketAddr) {
        self.mode.send_replace(Mode::To(target));
        self.cut();
    }

    /// Cuts every connection; new ones are accepted and hang (a network partition).
    pub fn partition(&self) {
        self.mode.send_replace(Mode::Hold);
        self.cut();
    }
}

impl Drop for Forward {
    fn drop(&mut self) {
        self.stop.cancel();
        self.cut();
    }
}
