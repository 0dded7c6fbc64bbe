//! The stations data: parsing `stations.csv`, the name normalisation every
//! setup shares, the liveboard's 50 lookups and the record format the
//! key/value setups store.
//!
//! Normalisation follows the rules of iRail's `Stations::getStations`
//! (irail/stations, PHP), re-stated rather than ported:
//! - only the part before a `/` counts, and a bracketed part is dropped
//!   (`Brüssel-Süd (Midi)` → `brussel sud`);
//! - accents are folded (`Liège` → `liege`, `ß` → `ss`) and case ignored;
//! - dashes, spaces, apostrophes, dots and commas all separate words, runs of
//!   them count as one (`'s Gravenbrakel` → `s gravenbrakel`);
//! - `st`, `sint`, `saint`, `sankt` are one word (`st`), as are `ste` and
//!   `sainte`; German `am` is dropped (`Frankfurt am Main Hbf`);
//! - iRail's abbreviations `Bru.` / `Brux.` expand to `brussel` / `bruxelles`,
//!   and `Brussel Nationaal…` / `Brussels Airport` mean
//!   `Brussels Airport - Zaventem`.
//!
//! Unlike iRail, only exact (normalised) matches count: iRail also returns
//! partial matches but ranks an exact one first, which is the one a liveboard
//! uses.

use std::fmt::Write as _;
use std::path::Path;

/// One station of `stations.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct Station {
    /// The NMBS id, the URI's last segment, e.g. `008814001`.
    pub id: String,
    /// The standard name, e.g. `Brussel-Zuid/Bruxelles-Midi`.
    pub name: String,
    /// The non-empty alternative names (fr, nl, de, en), in that order.
    pub alternatives: Vec<String>,
    /// Country code, e.g. `be`.
    pub country: String,
    /// Longitude and latitude as written in the file.
    pub lon: String,
    /// Latitude.
    pub lat: String,
}

impl Station {
    /// Every name the station is known by: its name and alternatives, and
    /// each `/`-separated part of them (`Brussels-South/Brussels-Midi`).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.name.as_str())
            .chain(self.alternatives.iter().map(String::as_str))
            .flat_map(|n| {
                let whole = std::iter::once(n);
                let parts = n.split('/').filter(move |_| n.contains('/'));
                whole.chain(parts)
            })
    }

    /// The record the key/value setups store: tab-separated fields
    /// (id, name, country, lon, lat, alternatives...). Cheaper to decode than
    /// JSON, which matters for the 50-lookups-in-50-µs bar.
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(96);
        let _ = write!(
            out,
            "{}\t{}\t{}\t{}\t{}",
            self.id, self.name, self.country, self.lon, self.lat
        );
        for alt in &self.alternatives {
            out.push('\t');
            out.push_str(alt);
        }
        out
    }

    /// Decodes [`Station::encode`]'s record.
    pub fn decode(record: &[u8]) -> Result<Station, String> {
        let text = std::str::from_utf8(record).map_err(|e| format!("station record: {e}"))?;
        let mut fields = text.split('\t');
        let mut next = |what: &str| {
            fields
                .next()
                .map(str::to_string)
                .ok_or_else(|| format!("station record without {what}: {text:?}"))
        };
        let (id, name, country, lon, lat) = (
            next("id")?,
            next("name")?,
            next("country")?,
            next("lon")?,
            next("lat")?,
        );
        Ok(Station {
            id,
            name,
            country,
            lon,
            lat,
            alternatives: fields.map(str::to_string).collect(),
        })
    }
}

/// Parses `stations.csv` (header `URI,name,alternative-fr,alternative-nl,
/// alternative-de,alternative-en,...,country-code,longitude,latitude,...`).
/// The file has no quoted fields; a quote is rejected rather than misread.
pub fn parse_stations(text: &str) -> Result<Vec<Station>, String> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().ok_or("empty file")?.split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .ok_or_else(|| format!("no `{name}` column"))
    };
    let (uri, name, country, lon, lat) = (
        col("URI")?,
        col("name")?,
        col("country-code")?,
        col("longitude")?,
        col("latitude")?,
    );
    let alts = [
        col("alternative-fr")?,
        col("alternative-nl")?,
        col("alternative-de")?,
        col("alternative-en")?,
    ];
    let mut out = Vec::new();
    for (i, line) in lines.enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if line.contains('"') {
            return Err(format!("line {}: quoted fields are not supported", i + 2));
        }
        let f: Vec<&str> = line.split(',').collect();
        if f.len() < header.len() {
            return Err(format!(
                "line {}: {} fields, expected {}",
                i + 2,
                f.len(),
                header.len()
            ));
        }
        let id = f[uri].rsplit('/').next().unwrap_or_default();
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "line {}: URI without a numeric id: {}",
                i + 2,
                f[uri]
            ));
        }
        out.push(Station {
            id: id.to_string(),
            name: f[name].to_string(),
            alternatives: alts
                .iter()
                .map(|&c| f[c])
                .filter(|a| !a.is_empty())
                .map(str::to_string)
                .collect(),
            country: f[country].to_string(),
            lon: f[lon].to_string(),
            lat: f[lat].to_string(),
        });
    }
    Ok(out)
}

/// Loads and parses the file.
pub fn load_stations(path: &Path) -> Result<Vec<Station>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_stations(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// One lookup of a liveboard: by name (`getStations`) or by id
/// (`getStationFromID`).
#[derive(Clone, Copy, Debug)]
pub enum Lookup {
    /// A name as typed or as a feed spells it.
    Name(&'static str),
    /// An id: `008814001`, `BE.NMBS.008814001` or the station's URI.
    Id(&'static str),
}

/// Folds one character: `Some(ascii)` for letters and digits (accents
/// removed, lowercased), `None` for a separator. Characters outside the table
/// are kept lowercased.
fn fold(c: char, out: &mut String) -> bool {
    let s = match c {
        'a'..='z' | '0'..='9' => {
            out.push(c);
            return true;
        }
        'A'..='Z' => {
            out.push(c.to_ascii_lowercase());
            return true;
        }
        '-' | ' ' | '\'' | '\u{2019}' | '.' | ',' | '_' | '\t' => return false,
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'æ' | 'À' | 'Á' | 'Â' | 'Ã' | 'Ä' | 'Å' | 'Æ' => {
            "a"
        }
        'ç' | 'Ç' | 'č' | 'Č' | 'ć' | 'Ć' => "c",
        'è' | 'é' | 'ê' | 'ë' | 'È' | 'É' | 'Ê' | 'Ë' => "e",
        'ì' | 'í' | 'î' | 'ï' | 'Ì' | 'Í' | 'Î' | 'Ï' => "i",
        'ñ' | 'Ñ' => "n",
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'Ò' | 'Ó' | 'Ô' | 'Õ' | 'Ö' | 'Ø' | 'ð' => {
            "o"
        }
        'ù' | 'ú' | 'û' | 'ü' | 'Ù' | 'Ú' | 'Û' | 'Ü' => "u",
        'ý' | 'ÿ' | 'Ý' => "y",
        'š' | 'Š' => "s",
        'ž' | 'Ž' => "z",
        'ß' => "ss",
        'œ' | 'Œ' => "oe",
        'þ' | 'Þ' => "th",
        'đ' | 'Đ' => "dj",
        'ŕ' | 'Ŕ' => "r",
        other => {
            out.extend(other.to_lowercase());
            return true;
        }
    };
    out.push_str(s);
    true
}

/// Appends the normalised word `word` (already folded) to `out`, applying
/// the word rules, with a separating space when `out` is not empty.
fn push_word(out: &mut String, word: &str) {
    let word = match word {
        "st" | "sint" | "saint" | "sankt" => "st",
        "ste" | "sainte" => "ste",
        "am" => return,
        "bru" => "brussel",
        "brux" => "bruxelles",
        w => w,
    };
    if !out.is_empty() {
        out.push(' ');
    }
    out.push_str(word);
}

/// Normalises a station name or query (see the module docs) into `out`
/// (cleared first). One pass over the characters, no allocation once `out`
/// and `word` have grown: this runs 50 times per liveboard in every setup.
pub fn normalize_into(name: &str, out: &mut String, word: &mut String) {
    out.clear();
    word.clear();
    let name = name.split('/').next().unwrap_or_default();
    let mut depth = 0u32;
    for c in name.chars() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            _ if depth > 0 => {}
            _ => {
                if !fold(c, word) && !word.is_empty() {
                    push_word(out, word);
                    word.clear();
                }
            }
        }
    }
    if !word.is_empty() {
        push_word(out, word);
    }
    // iRail's special case for the airport's many spellings.
    if out.starts_with("brussel nat") || out == "brussels airport" {
        out.clear();
        out.push_str("brussels airport zaventem");
    }
}

/// [`normalize_into`] returning a new string.
pub fn normalize(name: &str) -> String {
    let (mut out, mut word) = (String::new(), String::new());
    normalize_into(name, &mut out, &mut word);
    out
}

/// The canonical id of an id query: the digits after `BE.NMBS.` or the URI's
/// last segment, left-padded with zeros to nine digits; `None` when it is not
/// an id.
pub fn canonical_id(query: &str) -> Option<String> {
    let q = query.trim();
    let digits = q
        .strip_prefix("BE.NMBS.")
        .unwrap_or_else(|| q.rsplit('/').next().unwrap_or(q));
    if digits.is_empty() || digits.len() > 9 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(format!("{digits:0>9}"))
}

/// The key a lookup is stored under in the key/value setups and the
/// tiercache memory tier: `id:<canonical id>` or `name:<normalised name>`.
/// `None` for an id query that is not an id.
pub fn lookup_key(lookup: Lookup, buf: &mut String, word: &mut String) -> Option<String> {
    match lookup {
        Lookup::Id(q) => canonical_id(q).map(|id| format!("id:{id}")),
        Lookup::Name(q) => {
            normalize_into(q, buf, word);
            let mut key = String::with_capacity(5 + buf.len());
            key.push_str("name:");
            key.push_str(buf);
            Some(key)
        }
    }
}

/// Every `(key, station index)` a station can be found under, first station
/// in file order winning a name two stations share (as the scan does).
pub fn index_keys(stations: &[Station]) -> Vec<(String, usize)> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (i, s) in stations.iter().enumerate() {
        let id_key = format!("id:{}", s.id);
        if seen.insert(id_key.clone()) {
            out.push((id_key, i));
        }
        for n in s.names() {
            let norm = normalize(n);
            if norm.is_empty() {
                continue;
            }
            let key = format!("name:{norm}");
            if seen.insert(key.clone()) {
                out.push((key, i));
            }
        }
    }
    out
}

/// A liveboard: the 50 station lookups a departures board at Brussels-South
/// around 8am needs (destinations and vias), with the repeats the seed
/// mentions (Gent, Antwerpen and Schaarbeek several times), spelt as feeds
/// and users spell them: languages, case, accents, abbreviations, and some
/// lookups by id in each of the three id forms.
pub const LIVEBOARD: [Lookup; 50] = [
    Lookup::Id("008814001"),
    Lookup::Name("Gent-Sint-Pieters"),
    Lookup::Name("Antwerpen-Centraal"),
    Lookup::Name("Schaarbeek"),
    Lookup::Name("Liège-Guillemins"),
    Lookup::Name("Oostende"),
    Lookup::Name("Brussels Airport - Zaventem"),
    Lookup::Name("Namur"),
    Lookup::Name("gent st pieters"),
    Lookup::Name("Charleroi-Central"),
    Lookup::Name("Mons"),
    Lookup::Name("ANTWERPEN-CENTRAAL"),
    Lookup::Name("Schaerbeek"),
    Lookup::Name("Leuven"),
    Lookup::Name("Mechelen"),
    Lookup::Id("BE.NMBS.008892007"),
    Lookup::Name("Gand-Saint-Pierre"),
    Lookup::Name("Bruxelles-Central"),
    Lookup::Name("Brussel-Noord"),
    Lookup::Name("Kortrijk"),
    Lookup::Name("Tournai"),
    Lookup::Name("Luik-Guillemins"),
    Lookup::Name("Anvers-Central"),
    Lookup::Name("Brugge"),
    Lookup::Name("Paris Nord"),
    Lookup::Name("London Saint Pancras International"),
    Lookup::Name("Amsterdam CS"),
    Lookup::Name("Lille Europe"),
    Lookup::Name("schaarbeek"),
    Lookup::Name("Brussel-Nationaal-Luchthaven"),
    Lookup::Name("Nivelles"),
    Lookup::Name("Ottignies"),
    Lookup::Name("Halle"),
    Lookup::Name("Denderleeuw"),
    Lookup::Name("Aalst"),
    Lookup::Name("Geraardsbergen"),
    Lookup::Name("Braine-le-Comte"),
    Lookup::Name("Sint-Niklaas"),
    Lookup::Name("St-Truiden"),
    Lookup::Name("Hasselt"),
    Lookup::Id("http://irail.be/stations/NMBS/008821006"),
    Lookup::Name("Gent Sint-Pieters"),
    Lookup::Name("Antwerp-Central"),
    Lookup::Name("Luxembourg"),
    Lookup::Name("Welkenraedt"),
    Lookup::Name("Eupen"),
    Lookup::Name("Ieper"),
    Lookup::Name("Aix-la-Chapelle Hbf"),
    Lookup::Name("Frankfurt Main Flughafen Fernbf (ICE)"),
    Lookup::Name("Bru. Luxemburg"),
];
