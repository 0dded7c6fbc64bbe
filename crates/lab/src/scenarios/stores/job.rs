//! The analysis job of the `stores` scenario: the generated profile file,
//! its parser, the per-page aggregate record and its compact encoding, and
//! the reference aggregates computed in plain Rust (what every store must
//! hold after a pass).

use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Geometric, Zipf};
use std::collections::HashMap;

/// Shape of the generated data file.
#[derive(Clone, Debug)]
pub struct JobParams {
    /// Profiles (lines) in the data file; the seed's file had 10,000.
    pub profiles: usize,
    /// Fan pages in the universe the likes are drawn from.
    pub pages: u64,
    /// Exponent of the Zipf popularity of pages (1.0: the classic power law
    /// of fan counts).
    pub zipf_s: f64,
    /// Mean number of pages a profile likes (geometric, at least 1).
    pub mean_likes: f64,
    /// Cap on likes per profile.
    pub max_likes: usize,
    /// Seed of the generator: the same parameters give the same file.
    pub seed: u64,
}

/// Genders of the generated profiles (the third is "not given").
const GENDERS: [&str; 3] = ["m", "f", "-"];
/// Countries of the generated profiles; their index is the demographic slot.
pub const COUNTRIES: [&str; 16] = [
    "US", "GB", "CA", "AU", "DE", "FR", "BE", "NL", "ES", "IT", "BR", "MX", "IN", "PH", "ID", "TR",
];
/// Age buckets: <18, 18–24, 25–34, 35–44, 45–54, 55–64, 65+.
const AGE_BUCKETS: usize = 7;
/// The year ages are computed against (the seed's data is from 2009).
const YEAR: u32 = 2009;
const NAME_SYLLABLES: [&str; 12] = [
    "an", "bel", "cor", "da", "el", "fin", "gar", "ha", "is", "jo", "ka", "lu",
];

/// Writes the data file: one profile per line,
/// `id \t name \t gender \t birth_year \t country \t page,page,...`,
/// likes drawn Zipf-popular from the page universe, distinct per profile.
pub fn generate(p: &JobParams) -> String {
    let mut rng = StdRng::seed_from_u64(p.seed);
    let zipf = Zipf::new(p.pages, p.zipf_s).expect("valid zipf parameters");
    // Geometric counts failures before the first success: +1 gives >= 1.
    let likes = Geometric::new(1.0 / p.mean_likes).expect("mean_likes >= 1");
    let mut out = String::with_capacity(p.profiles * 120);
    let mut pages: Vec<u64> = Vec::new();
    for id in 1..=p.profiles {
        let n = ((likes.sample(&mut rng) + 1) as usize).min(p.max_likes);
        pages.clear();
        while pages.len() < n {
            let page = zipf.sample(&mut rng) as u64;
            if !pages.contains(&page) {
                pages.push(page);
            }
        }
        let name: String = (0..rng.gen_range(2..5))
            .map(|_| NAME_SYLLABLES[rng.gen_range(0..NAME_SYLLABLES.len())])
            .collect();
        let gender = GENDERS[rng.gen_range(0..GENDERS.len())];
        let born = rng.gen_range(1940..2000);
        let country = COUNTRIES[rng.gen_range(0..COUNTRIES.len())];
        let list: Vec<String> = pages.iter().map(|p| p.to_string()).collect();
        out.push_str(&format!(
            "{id}\t{name}\t{gender}\t{born}\t{country}\t{}\n",
            list.join(",")
        ));
    }
    out
}

/// One parsed line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Profile {
    /// The profile's id.
    pub id: u32,
    /// Index into the genders.
    pub gender: usize,
    /// Age bucket.
    pub age: usize,
    /// Index into [`COUNTRIES`].
    pub country: usize,
    /// Liked page ids.
    pub pages: Vec<u32>,
}

/// Parses one line into `into` (reused across lines, as the job does).
pub fn parse_line(line: &str, into: &mut Profile) -> Result<(), String> {
    let bad = |what: &str| format!("bad profile line ({what}): {line:?}");
    let mut fields = line.split('\t');
    let mut next = |what: &str| fields.next().ok_or_else(|| bad(what));
    into.id = next("id")?.parse().map_err(|_| bad("id"))?;
    let _name = next("name")?;
    let gender = next("gender")?;
    into.gender = GENDERS
        .iter()
        .position(|g| *g == gender)
        .ok_or_else(|| bad("gender"))?;
    let born: u32 = next("birth year")?.parse().map_err(|_| bad("birth year"))?;
    into.age = age_bucket(YEAR.saturating_sub(born));
    let country = next("country")?;
    into.country = COUNTRIES
        .iter()
        .position(|c| *c == country)
        .ok_or_else(|| bad("country"))?;
    into.pages.clear();
    for p in next("pages")?.split(',') {
        into.pages.push(p.parse().map_err(|_| bad("page id"))?);
    }
    Ok(())
}

fn age_bucket(age: u32) -> usize {
    match age {
        0..=17 => 0,
        18..=24 => 1,
        25..=34 => 2,
        35..=44 => 3,
        45..=54 => 4,
        55..=64 => 5,
        _ => 6,
    }
}

/// A page's aggregate: how many fans, their demographics, and for every
/// other page its fans also like, how many of them do — the seed author's
/// fan-page correlation analysis ("fans of P also like Q"). Popular pages
/// grow large records (thousands of co-liked pages), so decoding and
/// re-encoding them is most of the job's work, as unserialising PHP arrays
/// was in the seed. Every field is a sum, so the result does not depend on
/// the order the profiles are absorbed in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Aggregate {
    /// Fans.
    pub fans: u32,
    /// Fans per gender.
    pub gender: [u32; 3],
    /// Fans per age bucket.
    pub age: [u32; AGE_BUCKETS],
    /// Fans per country.
    pub country: [u32; COUNTRIES.len()],
    /// `(other page, fans of this page who like it)`, sorted by page.
    pub co_liked: Vec<(u32, u32)>,
}

/// Version byte in front of an encoded aggregate.
const FORMAT: u8 = 2;
/// Fixed counters: fans, genders, age buckets, countries.
const FIXED: usize = 1 + 3 + AGE_BUCKETS + COUNTRIES.len();
/// Size of the fixed part: version, the counters, the co-liked count (all
/// little-endian u32); then 8 bytes per co-liked page.
pub const FIXED_LEN: usize = 1 + 4 * (FIXED + 1);

impl Aggregate {
    /// Adds one fan, `profile`, of page `page`.
    pub fn absorb(&mut self, profile: &Profile, page: u32) {
        self.fans += 1;
        self.gender[profile.gender] += 1;
        self.age[profile.age] += 1;
        self.country[profile.country] += 1;
        for &q in &profile.pages {
            if q == page {
                continue;
            }
            match self.co_liked.binary_search_by_key(&q, |&(p, _)| p) {
                Ok(i) => self.co_liked[i].1 += 1,
                Err(i) => self.co_liked.insert(i, (q, 1)),
            }
        }
    }

    /// The encoded size of this aggregate.
    pub fn encoded_len(&self) -> usize {
        FIXED_LEN + 8 * self.co_liked.len()
    }

    fn counters(&self) -> impl Iterator<Item = &u32> {
        std::iter::once(&self.fans)
            .chain(&self.gender)
            .chain(&self.age)
            .chain(&self.country)
    }

    fn counters_mut(&mut self) -> impl Iterator<Item = &mut u32> {
        std::iter::once(&mut self.fans)
            .chain(&mut self.gender)
            .chain(&mut self.age)
            .chain(&mut self.country)
    }

    /// The compact value stored per page.
    pub fn encode(&self) -> Bytes {
        let mut out = Vec::with_capacity(self.encoded_len());
        out.push(FORMAT);
        for c in self.counters() {
            out.extend_from_slice(&c.to_le_bytes());
        }
        out.extend_from_slice(&(self.co_liked.len() as u32).to_le_bytes());
        for &(q, n) in &self.co_liked {
            out.extend_from_slice(&q.to_le_bytes());
            out.extend_from_slice(&n.to_le_bytes());
        }
        out.into()
    }

    /// Decodes a stored value; a value of another shape is an error (a
    /// store returning wrong bytes must fail the setup, not skew it).
    pub fn decode(value: &[u8]) -> Result<Aggregate, String> {
        let u32_at =
            |i: usize| u32::from_le_bytes([value[i], value[i + 1], value[i + 2], value[i + 3]]);
        if value.len() < FIXED_LEN || value[0] != FORMAT {
            return Err(format!(
                "stored aggregate has {} bytes (version {:?}), expected at least {FIXED_LEN} (version {FORMAT})",
                value.len(),
                value.first()
            ));
        }
        let n = u32_at(FIXED_LEN - 4) as usize;
        if value.len() != FIXED_LEN + 8 * n {
            return Err(format!(
                "stored aggregate has {} bytes for {n} co-liked pages, expected {}",
                value.len(),
                FIXED_LEN + 8 * n
            ));
        }
        let mut agg = Aggregate::default();
        for (i, c) in agg.counters_mut().enumerate() {
            *c = u32_at(1 + 4 * i);
        }
        agg.co_liked = (0..n)
            .map(|j| {
                let at = FIXED_LEN + 8 * j;
                (u32_at(at), u32_at(at + 4))
            })
            .collect();
        Ok(agg)
    }
}

/// The store key of page `page`'s aggregate.
pub fn page_key(page: u32) -> Bytes {
    Bytes::from(format!("fanpage:{page}"))
}

/// The aggregates every store must hold after a pass over `text`, computed
/// in plain Rust (no store, no encoding), plus the number of likes.
pub fn reference(text: &str) -> Result<(HashMap<u32, Aggregate>, u64), String> {
    let mut aggs: HashMap<u32, Aggregate> = HashMap::new();
    let mut profile = Profile::default();
    let mut likes = 0;
    for line in text.lines() {
        parse_line(line, &mut profile)?;
        for &page in &profile.pages {
            aggs.entry(page).or_default().absorb(&profile, page);
            likes += 1;
        }
    }
    Ok((aggs, likes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> JobParams {
        JobParams {
            profiles: 300,
            pages: 1_000,
            zipf_s: 1.0,
            mean_likes: 12.0,
            max_likes: 100,
            seed: 7,
        }
    }

    #[test]
    fn the_file_is_deterministic_and_parses() {
        let a = generate(&small());
        assert_eq!(a, generate(&small()));
        assert_eq!(a.lines().count(), 300);
        let mut p = Profile::default();
        let mut total = 0;
        for line in a.lines() {
            parse_line(line, &mut p).unwrap();
            assert!(!p.pages.is_empty() && p.pages.len() <= 100);
            let mut sorted = p.pages.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), p.pages.len(), "likes are distinct");
            total += p.pages.len();
        }
        let mean = total as f64 / 300.0;
        assert!((8.0..16.0).contains(&mean), "mean likes {mean}");
    }

    #[test]
    fn popular_pages_are_liked_far_more_than_the_tail() {
        let (aggs, likes) = reference(&generate(&small())).unwrap();
        // Likes are distinct per profile: the head page can have at most
        // one fan per profile.
        let head = aggs.get(&1).map_or(0, |a| a.fans);
        assert!(head > 100, "page 1 has {head} fans of 300 profiles");
        let once = aggs.values().filter(|a| a.fans == 1).count();
        assert!(once > 100, "only {once} pages have a single fan");
        assert_eq!(aggs.values().map(|a| a.fans as u64).sum::<u64>(), likes);
    }

    #[test]
    fn aggregates_round_trip_and_bad_values_are_errors() {
        let mut agg = Aggregate::default();
        let mut p = Profile::default();
        parse_line("5\tanna\tf\t1980\tBE\t3,9,4", &mut p).unwrap();
        agg.absorb(&p, 9);
        assert_eq!(agg.fans, 1);
        assert_eq!(agg.gender, [0, 1, 0]);
        assert_eq!(agg.age[2], 1, "29 years old in 2009: 25-34");
        assert_eq!(agg.country[6], 1);
        assert_eq!(
            agg.co_liked,
            vec![(3, 1), (4, 1)],
            "two other pages, sorted"
        );
        parse_line("6\tbob\tm\t1950\tUS\t9,4", &mut p).unwrap();
        agg.absorb(&p, 9);
        assert_eq!(agg.co_liked, vec![(3, 1), (4, 2)]);
        let enc = agg.encode();
        assert_eq!(enc.len(), FIXED_LEN + 16);
        assert_eq!(Aggregate::decode(&enc).unwrap(), agg);
        assert!(Aggregate::decode(&enc[1..]).is_err());
        assert!(parse_line("5\tanna\tx\t1980\tBE\t3", &mut p).is_err());
        assert!(parse_line("5\tanna\tf\t1980\tBE\t3,z", &mut p).is_err());
    }
}
