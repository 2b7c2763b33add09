//! What the app opens with: the command line's flags and the web edition's query
//! (`?view=…&tp=…&lang=…&theme=…&presenter=1&challenge=…`), checked against the list of views.

use serde::{Deserialize, Serialize};

/// What the URL's query asks for: `view`, `tp`, `lang`, `theme`, `presenter`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UrlLaunch {
    pub launch: Launch,
    pub tp: Option<usize>,
    /// Another TP size drawn beside the scenario's (`beside=4`).
    pub beside: Option<usize>,
    /// A live class's join code (`class=K7QX2M`): the page is a student's device; the class
    /// server is the page's own origin.
    pub class_code: Option<String>,
}

/// Reads `?view=…&tp=…&lang=…&theme=…&presenter=1`; an unknown value is an error naming the
/// choices, as the desktop's flags are.
pub fn parse_query(query: &str) -> Result<UrlLaunch, String> {
    let (mut view, mut tp, mut lang, mut theme, mut presenter) = (None, None, None, None, false);
    let mut challenge = None;
    let mut beside = None;
    let mut lesson: Option<String> = None;
    let mut step = None;
    let mut class_code = None;
    for pair in query
        .trim_start_matches('?')
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "view" => view = Some(v.to_string()),
            "tp" | "beside" => {
                let n: usize = v.parse().map_err(|_| {
                    format!(
                        "{k}={v}: TP must be a whole number from 1 to {}",
                        tplab_engine::config::MAX_TP
                    )
                })?;
                if !(1..=tplab_engine::config::MAX_TP).contains(&n) {
                    return Err(format!(
                        "{k}={v}: TP must be from 1 to {}",
                        tplab_engine::config::MAX_TP
                    ));
                }
                if k == "tp" {
                    tp = Some(n);
                } else {
                    beside = Some(n);
                }
            }
            "lang" => {
                lang = Some(
                    v.parse::<tplab_lessons::Lang>()
                        .map_err(|e| format!("lang={v}: {e}"))?,
                )
            }
            "theme" => {
                theme = Some(match v {
                    "light" => ThemeChoice::Light,
                    "dark" => ThemeChoice::Dark,
                    _ => return Err(format!("theme={v}: choose light or dark")),
                })
            }
            "presenter" => presenter = v != "0",
            "class" => {
                // Checked as a link would be (the address is the page's own).
                crate::lab::class::ClassLink::student("http://page", v)
                    .map_err(|e| format!("class={v}: {e}"))?;
                class_code = Some(v.to_string());
            }
            "lesson" => lesson = Some(v.to_string()),
            "step" => {
                step = Some(
                    v.parse::<usize>()
                        .map_err(|_| format!("step={v}: a step is a number (1 for the first)"))?,
                )
            }
            "challenge" => {
                challenge = Some(v.parse::<usize>().map_err(|_| {
                    format!("challenge={v}: a challenge is a number (1 for the first)")
                })?)
            }
            // Other parameters belong to whoever links here (analytics, cache busting).
            _ => {}
        }
    }
    let launch = Launch::new(view.as_deref(), presenter, lang, theme)
        .and_then(|l| l.with_challenge(challenge))
        .and_then(|l| l.with_link(lesson.as_deref(), step))
        .map_err(|e| e.to_string())?;
    Ok(UrlLaunch {
        launch,
        tp,
        beside,
        class_code,
    })
}

/// Light or dark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
pub enum ThemeChoice {
    #[default]
    Light,
    Dark,
}

/// What the command line asks the app to open with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Launch {
    /// A view id (`walkthrough` is the Step view's other name).
    pub view: Option<String>,
    pub presenter: bool,
    pub lang: Option<tplab_lessons::Lang>,
    pub theme: Option<ThemeChoice>,
    /// A design-lab challenge to open (1 to 8; implies the Design view).
    pub challenge: Option<usize>,
    /// A lesson to open (its slug; implies the Lessons view).
    pub lesson: Option<String>,
    /// A walkthrough step to open (from 1; implies the walkthrough).
    pub step: Option<usize>,
    /// A live class to join: a student's join address or the teacher's console link.
    pub class: Option<crate::lab::class::ClassLink>,
}

impl Launch {
    /// Opens a design-lab challenge: `n` must be one of the challenges, and the view (if one was
    /// asked for) the Design view. A teacher links `?view=design&challenge=3` or runs
    /// `tplab --challenge 3`.
    pub fn with_challenge(mut self, n: Option<usize>) -> anyhow::Result<Self> {
        let Some(n) = n else { return Ok(self) };
        let total = tplab_engine::block::design::challenge::all().len();
        if !(1..=total).contains(&n) {
            anyhow::bail!("challenge {n}: the design lab's challenges are numbered 1 to {total}");
        }
        match self.view.as_deref() {
            None | Some("design") => self.view = Some("design".to_string()),
            Some(other) => anyhow::bail!(
                "challenge {n} opens in the Design view, not '{other}': drop the view or choose design"
            ),
        }
        self.challenge = Some(n);
        Ok(self)
    }

    /// Opens a lesson (by number, `7`, or slug, `lesson-7-…`) or a walkthrough step (from 1): a
    /// link a teacher shares. The lesson must exist; a step implies the walkthrough and a
    /// lesson the Lessons view, and they cannot be asked for together with another view.
    pub fn with_link(mut self, lesson: Option<&str>, step: Option<usize>) -> anyhow::Result<Self> {
        if let Some(l) = lesson {
            let slug = lesson_slug(l)?;
            match self.view.as_deref() {
                None | Some("lessons") => self.view = Some("lessons".to_string()),
                Some(other) => anyhow::bail!(
                    "lesson {l} opens in the Lessons view, not '{other}': drop the view or choose lessons"
                ),
            }
            self.lesson = Some(slug);
        }
        if let Some(n) = step {
            if n == 0 {
                anyhow::bail!("step 0: steps are counted from 1");
            }
            match self.view.as_deref() {
                None | Some("step") => self.view = Some("step".to_string()),
                Some(other) => anyhow::bail!(
                    "step {n} opens in the walkthrough, not '{other}': drop the view or choose walkthrough"
                ),
            }
            self.step = Some(n);
        }
        Ok(self)
    }

    /// Joins a live class (`tplab --join http://192.168.1.20:8036/?class=K7QX2M`, or the
    /// teacher's `…/#teacher=SECRET`): a student's link opens the student's screen alone, the
    /// teacher's the Class view.
    pub fn with_class(mut self, url: Option<&str>) -> anyhow::Result<Self> {
        let Some(url) = url else { return Ok(self) };
        let link = crate::lab::class::ClassLink::parse(url)?;
        if link.is_teacher() {
            match self.view.as_deref() {
                None | Some("class") => self.view = Some("class".to_string()),
                Some(other) => anyhow::bail!(
                    "the teacher's link opens the Class view, not '{other}': drop --view"
                ),
            }
        }
        self.class = Some(link);
        Ok(self)
    }

    /// Checks the view name against the app's views: an unknown one is an error naming them all.
    pub fn new(
        view: Option<&str>,
        presenter: bool,
        lang: Option<tplab_lessons::Lang>,
        theme: Option<ThemeChoice>,
    ) -> anyhow::Result<Self> {
        let view = match view {
            None => None,
            Some(v) => {
                let id = if v == "walkthrough" { "step" } else { v };
                let ids: Vec<&str> = super::all_views().iter().map(|v| v.id()).collect();
                if !ids.contains(&id) {
                    anyhow::bail!(
                        "unknown view '{v}': choose one of walkthrough, {}",
                        ids.iter()
                            .filter(|i| **i != "step")
                            .copied()
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
                Some(id.to_string())
            }
        };
        Ok(Self {
            view,
            presenter,
            lang,
            theme,
            challenge: None,
            lesson: None,
            step: None,
            class: None,
        })
    }
}

/// A lesson's slug from its number (`7`) or slug; an unknown one is an error naming the lessons.
pub fn lesson_slug(l: &str) -> anyhow::Result<String> {
    let cat = tplab_lessons::Catalog::embedded()
        .map_err(|e| anyhow::anyhow!("the lessons could not be read: {e}"))?;
    let lessons: Vec<(u32, String)> = cat
        .lessons
        .iter()
        .map(|x| (x.order, x.slug.clone()))
        .collect();
    let by_number = l
        .parse::<u32>()
        .ok()
        .and_then(|n| lessons.iter().find(|(o, _)| *o == n));
    if let Some((_, s)) = by_number.or_else(|| lessons.iter().find(|(_, s)| s == l)) {
        return Ok(s.clone());
    }
    anyhow::bail!(
        "no lesson '{l}': give its number (1 to {}) or its name, one of {}",
        lessons.len(),
        lessons
            .iter()
            .map(|(_, s)| s.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each query is refused with an error that says the given words.
    fn refused(cases: &[(&str, &str)]) {
        for (bad, says) in cases {
            let e = parse_query(bad).expect_err(bad);
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn query_opens_a_view_at_a_tp_and_refuses_what_the_flags_refuse() {
        let u = parse_query("?view=playground&tp=2&lang=tr&theme=dark&presenter=1").expect("ok");
        assert_eq!(u.tp, Some(2));
        assert_eq!(u.launch.view.as_deref(), Some("playground"));
        assert_eq!(u.launch.lang, Some(tplab_lessons::Lang::Tr));
        assert_eq!(u.launch.theme, Some(ThemeChoice::Dark));
        assert!(u.launch.presenter);
        assert_eq!(parse_query("").expect("empty"), UrlLaunch::default());
        assert_eq!(
            parse_query("?view=walkthrough&utm=x")
                .expect("ok")
                .launch
                .view
                .as_deref(),
            Some("step")
        );
        for bad in [
            "?tp=0",
            "?tp=65",
            "?tp=two",
            "?view=nope",
            "?lang=de",
            "?theme=blue",
        ] {
            assert!(parse_query(bad).is_err(), "{bad}");
        }
        let e = parse_query("?view=nope").expect_err("unknown view");
        assert!(e.contains("playground"), "{e}");
    }

    #[test]
    fn a_class_link_joins_as_a_student_or_opens_the_console() {
        let u = parse_query("?class=K7QX2M").expect("a join code");
        assert_eq!(u.class_code.as_deref(), Some("K7QX2M"));
        let e = parse_query("?class=<x>").expect_err("not a code");
        assert!(
            e.contains("class=<x>") && e.contains("letters and digits"),
            "{e}"
        );
        let l = Launch::default()
            .with_class(Some("http://10.0.0.2:8036/?class=ABCDEF"))
            .expect("student");
        assert!(l.class.as_ref().is_some_and(|c| !c.is_teacher()));
        assert_eq!(l.view, None);
        let secret = "0f".repeat(32);
        let l = Launch::default()
            .with_class(Some(&format!("http://10.0.0.2:8036/#teacher={secret}")))
            .expect("teacher");
        assert_eq!(l.view.as_deref(), Some("class"));
        let e = Launch::default()
            .with_class(Some("http://10.0.0.2:8036/"))
            .expect_err("no role");
        assert!(e.to_string().contains("?class=CODE"), "{e}");
    }

    #[test]
    fn query_draws_another_tp_size_beside_and_names_the_range() {
        let u = parse_query("?view=timeline&tp=2&beside=4").expect("ok");
        assert_eq!((u.tp, u.beside), (Some(2), Some(4)));
        let e = parse_query("?beside=0").expect_err("out of range");
        assert!(e.contains("beside=0") && e.contains("from 1 to"), "{e}");
        let e = parse_query("?beside=two").expect_err("not a number");
        assert!(
            e.contains("beside=two") && e.contains("whole number"),
            "{e}"
        );
    }

    #[test]
    fn query_opens_a_challenge_in_the_design_view_and_names_the_range() {
        let u = parse_query("?challenge=3").expect("ok");
        assert_eq!(u.launch.view.as_deref(), Some("design"));
        assert_eq!(u.launch.challenge, Some(3));
        let u = parse_query("?view=design&challenge=8").expect("ok");
        assert_eq!(u.launch.challenge, Some(8));
        refused(&[
            ("?challenge=0", "1 to 8"),
            ("?challenge=9", "1 to 8"),
            ("?challenge=x", "a number"),
            ("?view=memory&challenge=2", "Design view"),
        ]);
    }

    /// The links a teacher shares: `?lesson=7` (or its name) opens the Lessons view on it,
    /// `?step=12` the walkthrough at step 12; the copied `tplab --lesson 7` is the same on the
    /// desktop. A lesson that does not exist, step 0, or another view beside them is refused
    /// with what would work.
    #[test]
    fn lesson_and_step_links_open_where_they_say() {
        let u = parse_query("?lesson=7").expect("a lesson by number");
        assert_eq!(u.launch.view.as_deref(), Some("lessons"));
        let slug = u.launch.lesson.clone().expect("a slug");
        assert_eq!(slug, "all-reduce", "lesson 7 is the ring all-reduce");
        let by_name = parse_query(&format!("?lesson={slug}&lang=tr")).expect("by name");
        assert_eq!(by_name.launch.lesson.as_deref(), Some(slug.as_str()));
        assert_eq!(by_name.launch.lang, Some(tplab_lessons::Lang::Tr));
        let u = parse_query("?step=12&tp=4").expect("a step");
        assert_eq!(u.launch.view.as_deref(), Some("step"));
        assert_eq!((u.launch.step, u.tp), (Some(12), Some(4)));
        assert_eq!(
            crate::platform::lesson_link(7),
            "tplab --lesson 7",
            "the desktop's copied link is the command"
        );
        refused(&[
            ("?lesson=99", "give its number (1 to"),
            ("?step=0", "counted from 1"),
            ("?step=two", "a step is a number"),
            ("?lesson=3&view=design", "opens in the Lessons view"),
            ("?step=3&view=design", "opens in the walkthrough"),
        ]);
    }
}
