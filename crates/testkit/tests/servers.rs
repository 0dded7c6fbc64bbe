//! The harness itself: servers start, answer, stop and come back.

use std::io::{Read, Write};
use std::net::TcpStream;
use tiercache_testkit::{Memcached, RedisServer};

fn roundtrip(addr: std::net::SocketAddr, request: &[u8], expect_prefix: &[u8]) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(request).unwrap();
    let mut buf = vec![0u8; 64];
    let n = s.read(&mut buf).unwrap();
    assert!(
        buf[..n].starts_with(expect_prefix),
        "{:?}",
        String::from_utf8_lossy(&buf[..n])
    );
}

#[test]
fn redis_starts_kills_and_restarts_on_the_same_port() {
    let Some(mut redis) = RedisServer::start(&[]) else {
        return;
    };
    roundtrip(redis.addr(), b"PING\r\n", b"+PONG");
    assert!(redis.socket().exists());
    redis.kill();
    assert!(TcpStream::connect(redis.addr()).is_err());
    redis.restart();
    roundtrip(redis.addr(), b"PING\r\n", b"+PONG");
}

#[test]
fn memcached_starts_kills_and_restarts_on_the_same_port() {
    let Some(mut mc) = Memcached::start() else {
        return;
    };
    roundtrip(mc.addr(), b"version\r\n", b"VERSION 1.");
    mc.kill();
    assert!(TcpStream::connect(mc.addr()).is_err());
    mc.restart();
    roundtrip(mc.addr(), b"version\r\n", b"VERSION 1.");
}
