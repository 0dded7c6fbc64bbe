use super::data::{self, canonical_id, normalize, Lookup, Station};
use super::setups::{self, Scratch};
use std::path::PathBuf;

fn stations() -> Vec<Station> {
    let csv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/stations.csv");
    data::load_stations(&csv).expect("stations.csv")
}

fn find(stations: &[Station], l: Lookup) -> Option<String> {
    setups::scan(stations, l, &mut Scratch::default()).map(|s| s.id.clone())
}

#[test]
fn normalisation_folds_case_accents_separators_and_saints() {
    assert_eq!(normalize("Liège-Guillemins"), "liege guillemins");
    assert_eq!(normalize("  LIEGE -- guillemins "), "liege guillemins");
    assert_eq!(normalize("Brüssel-Süd (Midi)"), "brussel sud");
    assert_eq!(normalize("Brussel-Zuid/Bruxelles-Midi"), "brussel zuid");
    assert_eq!(normalize("'s Gravenbrakel"), "s gravenbrakel");
    assert_eq!(
        normalize("St.-Genesius-Rode"),
        normalize("Sint-Genesius-Rode")
    );
    assert_eq!(normalize("Saint-Ghislain"), "st ghislain");
    assert_eq!(normalize("Berchem-Sainte-Agathe"), "berchem ste agathe");
    assert_eq!(normalize("Frankfurt am Main Hbf"), "frankfurt main hbf");
    assert_eq!(normalize("Bru. Centraal"), "brussel centraal");
    assert_eq!(
        normalize("Brussel-Nationaal-Luchthaven"),
        "brussels airport zaventem"
    );
    assert_eq!(normalize("Lëtzebuerg"), "letzebuerg");
    assert_eq!(normalize("Straße"), "strasse");
}

#[test]
fn ids_in_all_three_forms_are_canonical() {
    assert_eq!(canonical_id("008814001").as_deref(), Some("008814001"));
    assert_eq!(canonical_id("8814001").as_deref(), Some("008814001"));
    assert_eq!(
        canonical_id("BE.NMBS.008814001").as_deref(),
        Some("008814001")
    );
    assert_eq!(
        canonical_id("http://irail.be/stations/NMBS/008814001").as_deref(),
        Some("008814001")
    );
    assert_eq!(canonical_id("Brussel-Zuid"), None);
    assert_eq!(canonical_id("0088140011"), None);
}

#[test]
fn known_stations_are_found_by_every_spelling() {
    let st = stations();
    assert!(st.len() > 600, "{}", st.len());
    for q in [
        "Bruxelles-Midi",
        "brussel zuid",
        "BRUSSELS-SOUTH",
        "Brussels-Midi",
        "Brüssel-Süd",
    ] {
        assert_eq!(
            find(&st, Lookup::Name(q)).as_deref(),
            Some("008814001"),
            "{q}"
        );
    }
    for q in [
        "Liège-Guillemins",
        "liege guillemins",
        "Luik-Guillemins",
        "LÜTTICH GUILLEMINS",
    ] {
        assert_eq!(
            find(&st, Lookup::Name(q)).as_deref(),
            Some("008841004"),
            "{q}"
        );
    }
    for q in [
        "Gent-Sint-Pieters",
        "gent st pieters",
        "Gand-Saint-Pierre",
        "Ghent-Sint-Pieters",
    ] {
        assert_eq!(
            find(&st, Lookup::Name(q)).as_deref(),
            Some("008892007"),
            "{q}"
        );
    }
    assert_eq!(
        find(&st, Lookup::Id("BE.NMBS.008821006")).as_deref(),
        Some("008821006")
    );
    // Exact matches only: a prefix is not a station.
    assert_eq!(find(&st, Lookup::Name("Brussel")), None);
    assert_eq!(find(&st, Lookup::Name("Nowhere-les-Bains")), None);
    assert_eq!(find(&st, Lookup::Id("000000001")), None);
}

#[test]
fn the_index_answers_like_the_scan_for_every_name_of_every_station() {
    let st = stations();
    let index: std::collections::HashMap<String, usize> =
        data::index_keys(&st).into_iter().collect();
    let mut scratch = Scratch::default();
    let (mut buf, mut word) = (String::new(), String::new());
    for s in &st {
        for n in s.names() {
            let n: &'static str = Box::leak(n.to_string().into_boxed_str());
            let key = data::lookup_key(Lookup::Name(n), &mut buf, &mut word).unwrap();
            let scanned = setups::scan(&st, Lookup::Name(n), &mut scratch).map(|s| s.id.clone());
            let indexed = index.get(&key).map(|&i| st[i].id.clone());
            assert_eq!(scanned, indexed, "{n}");
            assert!(scanned.is_some(), "{n}");
        }
    }
}

#[test]
fn every_liveboard_lookup_finds_a_station_with_the_seeds_repeats() {
    let st = stations();
    let ids: Vec<String> = data::LIVEBOARD
        .iter()
        .map(|&l| find(&st, l).unwrap_or_else(|| panic!("{l:?} not found")))
        .collect();
    let count = |id: &str| ids.iter().filter(|x| *x == id).count();
    assert!(count("008892007") >= 3, "Gent-Sint-Pieters repeats");
    assert!(count("008821006") >= 3, "Antwerpen-Centraal repeats");
    assert!(count("008811007") >= 3, "Schaarbeek repeats");
}

#[test]
fn records_round_trip() {
    let st = stations();
    for s in &st {
        assert_eq!(&Station::decode(s.encode().as_bytes()).unwrap(), s);
    }
    assert!(Station::decode(b"008814001\tonly two").is_err());
}

#[test]
fn sqlite_setup_answers_like_the_scan() {
    let st = stations();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    setups::load_sqlite(&db, &st).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut b = setups::Backend::open(&setups::Source::Sqlite(db))
            .await
            .unwrap();
        let mut scratch = Scratch::default();
        for &l in data::LIVEBOARD.iter() {
            let got = b.lookup(l, &mut scratch).await.unwrap().map(|s| s.id);
            assert_eq!(got, find(&st, l), "{l:?}");
        }
        let none = b
            .lookup(Lookup::Name("Brussel"), &mut scratch)
            .await
            .unwrap();
        assert!(none.is_none());
    });
}
