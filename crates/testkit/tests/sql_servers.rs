//! The SQL server helpers start, restart and stop.

use std::time::Duration;
use tiercache_testkit::{wait_for_port, Mariadb, Postgres};

#[test]
fn postgres_starts_restarts_and_stops() {
    let Some(mut pg) = Postgres::start() else {
        return;
    };
    assert!(pg.url().starts_with("postgres://"));
    pg.create_database("other");
    pg.kill();
    assert!(!wait_for_port(pg.addr(), Duration::from_millis(300)));
    pg.restart();
    assert!(wait_for_port(pg.addr(), Duration::from_secs(1)));
    let dir = pg.dir().to_path_buf();
    drop(pg);
    assert!(!dir.exists());
}

#[test]
fn mariadb_starts_restarts_and_stops() {
    let Some(mut db) = Mariadb::start() else {
        return;
    };
    assert!(db.url().starts_with("mysql://"));
    db.kill();
    assert!(!wait_for_port(db.addr(), Duration::from_millis(300)));
    db.restart();
    db.root_sql("SELECT 1");
    let dir = db.dir().to_path_buf();
    drop(db);
    assert!(!dir.exists());
}
