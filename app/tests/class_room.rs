//! A live class through the real server on 127.0.0.1 and the app's own client: the teacher's
//! console and three students' devices, each a whole app in a kittest harness, clicked through
//! a full Peer Instruction round (vote, reveal, discuss and vote again, reveal, answer) and a
//! design-lab challenge; the teacher's counts and the exported CSV are checked against what
//! the students clicked. The snapshot tests render the student's screen at 390×844 and the
//! console at 1920×1080, in English and Turkish.

mod common;

use common::*;
use egui_kittest::kittest::{NodeT, Queryable};
use egui_kittest::Harness;
use std::time::{Duration, Instant};
use tplab::lab::class::{ClassLink, Status};
use tplab::TplabApp;
use tplab_class::protocol::{Phase, PlanGroup, QuestionBody, VoteValue};
use tplab_class::{Limits, ServerConfig};

/// A class server on a port of its own, on a runtime that lives as long as the test.
struct Server {
    _rt: tokio::runtime::Runtime,
    running: Option<tplab_class::Running>,
    base: String,
    code: String,
    secret: String,
}

impl Server {
    fn start(dir: &std::path::Path) -> Self {
        Self::start_on(dir, "127.0.0.1:0")
    }

    /// A server on `bind` (a restarted class comes back on the same address and port).
    fn start_on(dir: &std::path::Path, bind: &str) -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let mut config = ServerConfig::new(bind.parse().expect("an address"), dir.to_path_buf());
        // Every device of the test shares one address: the per-address limits are the
        // lecture hall's, raised for one machine playing four.
        config.limits = Limits {
            connections_per_address: 64,
            messages_per_second: 1000.0,
            burst: 1000.0,
            ..Limits::default()
        };
        let running = rt
            .block_on(tplab_class::start(config))
            .expect("the class server starts");
        Self {
            base: format!("http://{}", running.addr),
            code: running.code.clone(),
            secret: running.secret.clone(),
            running: Some(running),
            _rt: rt,
        }
    }

    fn teacher_link(&self) -> ClassLink {
        ClassLink::parse(&format!("{}/#teacher={}", self.base, self.secret)).expect("teacher")
    }

    fn student_link(&self) -> ClassLink {
        ClassLink::parse(&format!("{}/?class={}", self.base, self.code)).expect("student")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(r) = self.running.take() {
            self._rt.block_on(r.shutdown());
        }
    }
}

/// An app joined to the class, in a `w`×`h` window (no rendering: behaviour only).
fn device(
    link: ClassLink,
    export_dir: &std::path::Path,
    w: f32,
    h: f32,
) -> Harness<'static, TplabApp> {
    let mut app = TplabApp::default();
    app.export_dir = export_dir.to_path_buf();
    app.join_class(None, link);
    let mut h = Harness::builder()
        .with_size([w, h])
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), app);
    h.run_steps(2);
    h
}

fn class<'a>(h: &'a Harness<'static, TplabApp>) -> &'a tplab::lab::class::ClassState {
    &h.state()
        .shared
        .class
        .as_ref()
        .expect("joined a class")
        .state
}

/// Runs a frame on every device until `ready` holds (the server answers on its own threads;
/// the devices see it when they poll), or fails after 15 s naming `what`.
fn settle(
    devices: &mut [&mut Harness<'static, TplabApp>],
    what: &str,
    ready: impl Fn(&[&mut Harness<'static, TplabApp>]) -> bool,
) {
    let start = Instant::now();
    loop {
        for d in devices.iter_mut() {
            d.run_steps(1);
        }
        if ready(devices) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "waited 15 s for {what}: teacher {:?}",
            class(devices[0])
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Taps the `nth` widget labelled `label` (the phone's page has the challenge on top once the
/// question is answered: everything tapped here is on screen at 390×844).
fn tap(h: &mut Harness<'static, TplabApp>, label: &str, nth: usize) {
    h.get_all_by_label(label)
        .nth(nth)
        .unwrap_or_else(|| panic!("no {label} #{nth}"))
        .click();
    h.run_steps(2);
}

/// Clicks the first button whose label starts with `prefix` (a choice: "B   …").
fn click_choice(h: &mut Harness<'static, TplabApp>, letter: &str) {
    let prefix = format!("{letter}   ");
    h.get_by(|n| n.label().is_some_and(|l| l.starts_with(&prefix)))
        .click();
    h.run_steps(2);
}

/// A class of one: the server, the teacher's console (1920×1080) and one student's phone
/// (390×844), both joined. The folders live as long as the value (dropped after the server).
struct ClassOfOne {
    teacher: Harness<'static, TplabApp>,
    student: Harness<'static, TplabApp>,
    _server: Server,
    _data: tempfile::TempDir,
    _exports: tempfile::TempDir,
}

fn class_of_one() -> ClassOfOne {
    let data = tempfile::tempdir().expect("a data folder");
    let exports = tempfile::tempdir().expect("an export folder");
    let server = Server::start(data.path());
    let mut teacher = device(server.teacher_link(), exports.path(), 1920.0, 1080.0);
    let mut student = device(server.student_link(), exports.path(), 390.0, 844.0);
    click(&mut student, "Join the class", 2);
    settle(&mut [&mut teacher, &mut student], "both to join", |d| {
        d.iter().all(|h| class(h).status == Status::Joined) && class(d[0]).joined == 1
    });
    ClassOfOne {
        teacher,
        student,
        _server: server,
        _data: data,
        _exports: exports,
    }
}

#[test]
fn a_teacher_and_three_students_run_a_round_and_a_challenge() {
    let data = tempfile::tempdir().expect("a data folder");
    let exports = tempfile::tempdir().expect("an export folder");
    let server = Server::start(data.path());
    let mut teacher = device(server.teacher_link(), exports.path(), 1920.0, 1080.0);
    let mut students: Vec<_> = (0..3)
        .map(|_| device(server.student_link(), exports.path(), 390.0, 844.0))
        .collect();
    assert_eq!(teacher.state().active_id(), "class");
    assert!(students.iter().all(|s| s.state().is_student()));

    // Students join: one with a name typed, two without.
    students[0]
        .get_by_role(egui::accesskit::Role::TextInput)
        .focus();
    students[0].run_steps(1);
    students[0]
        .get_by_role(egui::accesskit::Role::TextInput)
        .type_text("Ada");
    students[0].run_steps(2);
    for s in students.iter_mut() {
        click(s, "Join the class", 2);
    }
    {
        let [a, b, c] = &mut students[..] else {
            unreachable!()
        };
        settle(&mut [&mut teacher, a, b, c], "everyone to join", |d| {
            d.iter().all(|h| class(h).status == Status::Joined) && class(d[0]).joined == 3
        });
    }
    assert_eq!(
        class(&students[0]).me.as_ref().map(|m| m.1.as_str()),
        Some("Ada")
    );
    assert!(students[1]
        .query_by_label("Waiting for the teacher…")
        .is_some());

    // The teacher asks the quiz's first question; every device shows it, with its choices.
    click(&mut teacher, "Ask the room", 2);
    {
        let [a, b, c] = &mut students[..] else {
            unreachable!()
        };
        settle(&mut [&mut teacher, a, b, c], "the question", |d| {
            d.iter().all(|h| class(h).question.is_some())
        });
    }
    let q = class(&teacher).question.clone().expect("posed");
    let QuestionBody::Choice { choices } = &q.view.body else {
        panic!("the quiz's first question has choices: {:?}", q.view.body)
    };
    assert!(choices.len() >= 3, "{choices:?}");
    // Nothing on a student's device names the answer before the reveal.
    assert!(class(&students[0])
        .question
        .as_ref()
        .is_some_and(|q| q.answer.is_none()));

    // First vote: A, B, B (Ada changes her mind from C to A: one vote counts).
    click_choice(&mut students[0], "C");
    click_choice(&mut students[0], "A");
    click_choice(&mut students[1], "B");
    click_choice(&mut students[2], "B");
    {
        let [a, b, c] = &mut students[..] else {
            unreachable!()
        };
        settle(&mut [&mut teacher, a, b, c], "three votes counted", |d| {
            class(d[0])
                .question
                .as_ref()
                .is_some_and(|q| q.answered[0] == 3)
                && d[1..].iter().all(|h| {
                    class(h)
                        .question
                        .as_ref()
                        .is_some_and(|q| q.my_votes[0].is_some())
                })
                && class(d[1]).question.as_ref().and_then(|q| q.my_votes[0])
                    == Some(VoteValue::Choice { choice: 0 })
        });
    }
    assert!(teacher
        .query_by_label_contains("3 answered (vote 1)")
        .is_some());

    // Reveal: the teacher sees the distribution; students see the vote closed.
    click(&mut teacher, "Reveal the votes", 2);
    {
        let [a, b, c] = &mut students[..] else {
            unreachable!()
        };
        settle(
            &mut [&mut teacher, a, b, c],
            "the first distribution",
            |d| {
                class(d[0])
                    .question
                    .as_ref()
                    .is_some_and(|q| q.dists[0].is_some())
                    && d[1..].iter().all(|h| {
                        class(h)
                            .question
                            .as_ref()
                            .is_some_and(|q| q.view.phase == Phase::Revealed)
                    })
            },
        );
    }
    let first = class(&teacher).question.clone().expect("q").dists[0].clone();
    assert_eq!(
        first,
        Some(tplab_class::protocol::Dist::Choice {
            counts: {
                let mut c = vec![0; choices.len()];
                c[0] = 1;
                c[1] = 2;
                c
            }
        })
    );
    assert!(students[0]
        .query_by_label("Votes are closed: look at the projector.")
        .is_some());

    // Discuss and vote again: B, B, C; the second distribution beside the first.
    click(&mut teacher, "Discuss and vote again", 2);
    {
        let [a, b, c] = &mut students[..] else {
            unreachable!()
        };
        settle(
            &mut [&mut teacher, a, b, c],
            "the second vote to open",
            |d| {
                d.iter().all(|h| {
                    class(h)
                        .question
                        .as_ref()
                        .is_some_and(|q| q.view.phase == Phase::Revoting)
                })
            },
        );
    }
    assert!(students[2]
        .query_by_label("Discuss with your neighbour, then vote again.")
        .is_some());
    // A dropped connection mid-round: the device comes back by itself, the same student.
    students[1]
        .state_mut()
        .shared
        .class
        .as_mut()
        .expect("class")
        .drop_connection();
    click_choice(&mut students[0], "B");
    click_choice(&mut students[2], "C");
    {
        let [a, b, c] = &mut students[..] else {
            unreachable!()
        };
        settle(
            &mut [&mut teacher, a, b, c],
            "the dropped device to come back",
            |d| {
                class(d[2]).status == Status::Joined
                    && d[2]
                        .state()
                        .shared
                        .class
                        .as_ref()
                        .is_some_and(|c| c.joined())
            },
        );
    }
    click_choice(&mut students[1], "B");
    {
        let [a, b, c] = &mut students[..] else {
            unreachable!()
        };
        settle(&mut [&mut teacher, a, b, c], "three second votes", |d| {
            class(d[0])
                .question
                .as_ref()
                .is_some_and(|q| q.answered[1] == 3)
        });
    }
    assert_eq!(
        class(&teacher).joined,
        3,
        "the reconnect is the same student"
    );
    click(&mut teacher, "Reveal the votes", 2);
    {
        let [a, b, c] = &mut students[..] else {
            unreachable!()
        };
        settle(
            &mut [&mut teacher, a, b, c],
            "the second distribution",
            |d| {
                class(d[0])
                    .question
                    .as_ref()
                    .is_some_and(|q| q.dists[1].is_some())
            },
        );
    }
    assert!(teacher.query_by_label_contains("Vote 1: 3 votes").is_some());
    assert!(teacher.query_by_label_contains("Vote 2: 3 votes").is_some());

    // The answer, on every device.
    click(&mut teacher, "Reveal the answer", 2);
    {
        let [a, b, c] = &mut students[..] else {
            unreachable!()
        };
        settle(&mut [&mut teacher, a, b, c], "the answer", |d| {
            d.iter().all(|h| {
                class(h)
                    .question
                    .as_ref()
                    .is_some_and(|q| q.answer.is_some())
            })
        });
    }
    let (_, summary) = class(&teacher)
        .question
        .clone()
        .and_then(|q| q.answer)
        .expect("answered");
    assert_eq!((summary.voted_first, summary.voted_second), (3, 3));
    assert!(students[0]
        .query_by_label_contains("The answer: ")
        .is_some());
    // Ada voted A, then B; each phone says whether its own votes were right.
    let right = match class(&teacher)
        .question
        .as_ref()
        .and_then(|q| q.answer.clone())
    {
        Some((tplab_class::protocol::AnswerView::Choice { answer, .. }, _)) => answer,
        other => panic!("a choice answer: {other:?}"),
    };
    let says = |h: &Harness<'static, TplabApp>, round: u8, choice: u32| {
        let words = if choice == right {
            "was right"
        } else {
            "was not right"
        };
        h.query_by_label(&format!("Your vote {round} {words}."))
            .is_some()
    };
    assert!(says(&students[0], 1, 0) && says(&students[0], 2, 1));
    assert!(says(&students[2], 1, 1) && says(&students[2], 2, 2));

    // A design-lab challenge: stage 1 (the MLP's fc1 and fc2 are free).
    click(&mut teacher, "Set this challenge", 2);
    {
        let [a, b, c] = &mut students[..] else {
            unreachable!()
        };
        settle(&mut [&mut teacher, a, b, c], "the challenge", |d| {
            d.iter().all(|h| class(h).challenge.is_some())
        });
    }
    // Ada: fc1 by columns, fc2 by rows. The second: fc1 by rows, fc2 by columns. The third
    // sends the start as it is.
    for (s, fc1, fc2) in [(0, "Columns", "Rows"), (1, "Rows", "Columns")] {
        let h = &mut students[s];
        // The third of each label is fc1's, the fourth fc2's (qkv, out, fc1, fc2).
        tap(h, fc1, 2);
        tap(h, fc2, 3);
    }
    for s in students.iter_mut() {
        tap(s, "Check my plan", 0);
    }
    {
        let [a, b, c] = &mut students[..] else {
            unreachable!()
        };
        settle(
            &mut [&mut teacher, a, b, c],
            "three verdicts and the room's plans",
            |d| {
                d[1..].iter().all(|h| class(h).verdict.is_some())
                    && class(d[0]).plans.as_ref().is_some_and(|p| p.submitted == 3)
            },
        );
    }
    let room = class(&teacher).plans.clone().expect("plans");
    assert_eq!(room.groups.iter().map(|g| g.count).sum::<u32>(), 3);
    let ada = class(&students[0]).verdict.clone().expect("verdict");
    assert!(ada.solved && ada.group != PlanGroup::Refused, "{ada:?}");
    let second = class(&students[1]).verdict.clone().expect("verdict");
    // fc1 by rows, fc2 by columns: the rules place an extra collective; valid but costly.
    assert_eq!(second.group, PlanGroup::Costly, "{second:?}");
    assert!(!second.solved && !second.missing.is_empty(), "{second:?}");
    assert!(teacher.query_by_label("Plans submitted: 3").is_some());

    // The costly plan on the projector, without a name: the teacher's screen steps through
    // exactly that plan in the walkthrough; then back to the console.
    let costly = room
        .plans
        .iter()
        .position(|p| p.group == PlanGroup::Costly)
        .expect("the costly plan in the room's list");
    tap(&mut teacher, "Show on the projector", costly);
    teacher.run_steps(2);
    assert_eq!(teacher.state().active_id(), "step");
    assert_eq!(
        teacher.state().shared.walk_choice(),
        tplab::lab::WalkChoice::MyPlan
    );
    let shown = tplab_class::wire::to_plan(&room.plans[costly].plan).expect("a plan");
    let on_screen = teacher.state().shared.design.plan();
    for w in tplab_engine::block::design::Weight::ALL {
        assert_eq!(on_screen.split(w), shown.split(w), "{w:?}");
    }
    assert!(
        teacher.query_by_label_contains("Ada").is_none(),
        "no name on the projector"
    );
    assert!(
        teacher
            .query_all_by_label_contains("A student's plan (no name) on 2 GPUs")
            .count()
            > 0,
        "the banner says whose plan it is"
    );
    assert!(teacher.state_mut().select("class"));
    teacher.run_steps(2);

    // The export: one row per student and question, both votes.
    click(&mut teacher, "Export the class (CSV)", 2);
    let csv_path = exports
        .path()
        .join(format!("tplab-class-{}.csv", server.code));
    {
        let [a, b, c] = &mut students[..] else {
            unreachable!()
        };
        settle(&mut [&mut teacher, a, b, c], "the export", |_| {
            csv_path.is_file()
        });
    }
    let csv = std::fs::read_to_string(&csv_path).expect("the CSV");
    // (The CSV was written by the console: the teacher's own app fetched it with the secret.)
    let records = csv_records(&csv);
    assert_eq!(
        records.first().map(|h| h.join(",")).as_deref(),
        Some(tplab_class::export::CSV_HEADER)
    );
    let rows = &records[1..];
    assert_eq!(rows.len(), 3, "one row per student: {csv}");
    // Every vote: A then B (Ada), B then B, B then C.
    let mut votes: Vec<String> = rows.iter().map(|r| format!("{}{}", r[6], r[9])).collect();
    votes.sort();
    assert_eq!(votes, ["AB", "BB", "BC"], "{csv}");

    // A prediction of the walkthrough, from the console's list for the scenario.
    click(&mut teacher, "Ask the room this prediction", 2);
    {
        let [a, b, c] = &mut students[..] else {
            unreachable!()
        };
        settle(
            &mut [&mut teacher, a, b, c],
            "the walkthrough's prediction",
            |d| {
                d.iter().all(|h| {
                    class(h).question.as_ref().is_some_and(|q| {
                        q.view
                            .source
                            .as_deref()
                            .is_some_and(|s| s.starts_with("walkthrough:"))
                    })
                })
            },
        );
    }

    // A numeric question: students type a number (either decimal mark) and send it.
    teacher
        .state_mut()
        .shared
        .class
        .as_mut()
        .expect("class")
        .send(tplab_class::protocol::ClientMsg::Pose {
            question: tplab_class::protocol::QuestionSpec {
                prompt: "How many all-reduces does one layer's forward pass need?".into(),
                source: None,
                kind: tplab_class::protocol::QuestionKind::Numeric {
                    answer: 2.0,
                    tolerance: 0.0,
                    unit: None,
                },
                timer_s: None,
                translations: Vec::new(),
            },
        });
    {
        let [a, b, c] = &mut students[..] else {
            unreachable!()
        };
        settle(&mut [&mut teacher, a, b, c], "the numeric question", |d| {
            d.iter().all(|h| {
                class(h).question.as_ref().is_some_and(|q| {
                    matches!(q.view.body, QuestionBody::Numeric { .. })
                        && q.view.phase == Phase::Voting
                })
            })
        });
    }
    for (s, typed) in students.iter_mut().zip(["2", "2,0", "4"]) {
        s.get_by_role(egui::accesskit::Role::TextInput).focus();
        s.run_steps(1);
        s.get_by_role(egui::accesskit::Role::TextInput)
            .type_text(typed);
        s.run_steps(2);
        click(s, "Send", 2);
    }
    {
        let [a, b, c] = &mut students[..] else {
            unreachable!()
        };
        settle(&mut [&mut teacher, a, b, c], "three numbers counted", |d| {
            class(d[0])
                .question
                .as_ref()
                .is_some_and(|q| q.answered[0] == 3)
        });
    }
    click(&mut teacher, "Reveal the votes", 2);
    {
        let [a, b, c] = &mut students[..] else {
            unreachable!()
        };
        settle(
            &mut [&mut teacher, a, b, c],
            "the numbers' histogram",
            |d| {
                class(d[0]).question.as_ref().is_some_and(|q| {
                    matches!(
                        q.dists[0],
                        Some(tplab_class::protocol::Dist::Histogram { .. })
                    )
                })
            },
        );
    }
    click(&mut teacher, "Reveal the answer", 2);
    {
        let [a, b, c] = &mut students[..] else {
            unreachable!()
        };
        settle(&mut [&mut teacher, a, b, c], "the numeric answer", |d| {
            d.iter().all(|h| {
                class(h)
                    .question
                    .as_ref()
                    .is_some_and(|q| q.answer.is_some())
            })
        });
    }
    let (_, summary) = class(&teacher)
        .question
        .clone()
        .and_then(|q| q.answer)
        .expect("answered");
    assert_eq!((summary.right_first, summary.voted_first), (2, 3));

    // The teacher ends the class (a second, explicit press): every device says so and stops
    // reconnecting; a new device with the code is refused.
    click(&mut teacher, "End the class…", 2);
    click(&mut teacher, "End it", 2);
    {
        let [a, b, c] = &mut students[..] else {
            unreachable!()
        };
        settle(&mut [&mut teacher, a, b, c], "the class to end", |d| {
            d[1..].iter().all(|h| class(h).status == Status::Ended)
        });
    }
    assert!(students[2].query_by_label("The class has ended.").is_some());
    let mut late = device(server.student_link(), exports.path(), 390.0, 844.0);
    click(&mut late, "Join the class", 2);
    settle(&mut [&mut late], "the late device's refusal", |d| {
        matches!(class(d[0]).status, Status::Refused { .. })
    });
    assert!(csv.contains("Ada"), "{csv}");
}

/// The records of a CSV (quoted fields may hold commas, quotes and line breaks).
fn csv_records(text: &str) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    let (mut record, mut field) = (Vec::new(), String::new());
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => record.push(std::mem::take(&mut field)),
            (false, '\n') => {
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
            }
            (false, c) => field.push(c),
        }
    }
    if !field.is_empty() || !record.is_empty() {
        record.push(field);
        records.push(record);
    }
    records
}

#[test]
fn a_restarted_server_gets_the_devices_back_by_themselves_with_their_votes() {
    let data = tempfile::tempdir().expect("a data folder");
    let exports = tempfile::tempdir().expect("an export folder");
    let server = Server::start(data.path());
    let bind = server.base.trim_start_matches("http://").to_string();
    let code = server.code.clone();
    let mut teacher = device(server.teacher_link(), exports.path(), 1920.0, 1080.0);
    let mut student = device(server.student_link(), exports.path(), 390.0, 844.0);
    click(&mut student, "Join the class", 2);
    settle(&mut [&mut teacher, &mut student], "both to join", |d| {
        d.iter().all(|h| class(h).status == Status::Joined) && class(d[0]).joined == 1
    });
    click(&mut teacher, "Ask the room", 2);
    settle(&mut [&mut teacher, &mut student], "the question", |d| {
        class(d[1]).question.is_some()
    });
    click_choice(&mut student, "B");
    let voted = Some(VoteValue::Choice { choice: 1 });
    settle(&mut [&mut teacher, &mut student], "the vote", |d| {
        class(d[1]).question.as_ref().and_then(|q| q.my_votes[0]) == voted
            && class(d[0])
                .question
                .as_ref()
                .is_some_and(|q| q.answered[0] == 1)
    });
    // The server stops (Ctrl-C, a crash): both devices notice and keep trying.
    drop(server);
    settle(
        &mut [&mut teacher, &mut student],
        "the devices to notice",
        |d| {
            d.iter()
                .all(|h| matches!(class(h).status, Status::Connecting { .. }))
        },
    );
    assert!(student.query_by_label_contains("trying again").is_some());
    // The next start on the same folder and port resumes the class: the devices come back by
    // themselves, the student as the same student with the vote kept.
    let again = Server::start_on(data.path(), &bind);
    assert_eq!(again.code, code, "the class is resumed");
    settle(
        &mut [&mut teacher, &mut student],
        "the devices to come back",
        |d| {
            d.iter().all(|h| class(h).status == Status::Joined)
                && class(d[1]).question.as_ref().and_then(|q| q.my_votes[0]) == voted
                && class(d[0])
                    .question
                    .as_ref()
                    .is_some_and(|q| q.answered[0] == 1)
        },
    );
    assert_eq!(
        class(&teacher).joined,
        1,
        "the same student, not a second one"
    );
}

/// The seconds left that a device shows ("29 s left"), read from its screen.
fn seconds_shown(h: &Harness<'static, TplabApp>) -> Option<u64> {
    h.query_by(|n| {
        n.role() == egui::accesskit::Role::Label
            && n.value().is_some_and(|l| l.ends_with(" s left"))
    })
    .and_then(|n| n.accesskit_node().value())
    .and_then(|l| {
        let digits: String = l
            .chars()
            .take_while(|c| !c.is_whitespace())
            .filter(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    })
}

#[test]
fn a_timer_counts_down_on_the_projector_and_the_phone_and_the_revote_gets_it_too() {
    let room = class_of_one();
    let (mut teacher, mut student) = (room.teacher, room.student);
    // No timer unless the teacher sets one.
    click(&mut teacher, "Ask the room", 2);
    settle(&mut [&mut teacher, &mut student], "the question", |d| {
        class(d[1]).question.is_some()
    });
    assert_eq!(seconds_shown(&student), None);
    assert_eq!(seconds_shown(&teacher), None);
    // 30 s: both screens count down from it.
    click(&mut teacher, "30 s", 1);
    click(&mut teacher, "Ask the room", 2);
    settle(
        &mut [&mut teacher, &mut student],
        "the timed question",
        |d| {
            d.iter()
                .all(|h| class(h).question.as_ref().is_some_and(|q| q.view.id == 2))
        },
    );
    let first = [seconds_shown(&teacher), seconds_shown(&student)];
    for s in first {
        assert!(matches!(s, Some(28..=30)), "{first:?}");
    }
    std::thread::sleep(Duration::from_millis(1100));
    teacher.run_steps(1);
    student.run_steps(1);
    let later = [seconds_shown(&teacher), seconds_shown(&student)];
    for (a, b) in first.iter().zip(&later) {
        assert!(b < a, "the timer counts down: {first:?} then {later:?}");
    }
    // The first distribution stops the clock; "discuss and vote again" starts it again.
    click_choice(&mut student, "A");
    settle(&mut [&mut teacher, &mut student], "the vote", |d| {
        class(d[0])
            .question
            .as_ref()
            .is_some_and(|q| q.answered[0] == 1)
    });
    click(&mut teacher, "Reveal the votes", 2);
    settle(&mut [&mut teacher, &mut student], "the reveal", |d| {
        d.iter().all(|h| {
            class(h)
                .question
                .as_ref()
                .is_some_and(|q| q.view.phase == Phase::Revealed)
        })
    });
    assert_eq!(
        seconds_shown(&student),
        None,
        "no clock while the votes are shown"
    );
    click(&mut teacher, "Discuss and vote again", 2);
    settle(&mut [&mut teacher, &mut student], "the revote", |d| {
        d.iter().all(|h| {
            class(h)
                .question
                .as_ref()
                .is_some_and(|q| q.view.phase == Phase::Revoting)
        })
    });
    assert!(matches!(seconds_shown(&student), Some(28..=30)));
    assert!(matches!(seconds_shown(&teacher), Some(28..=30)));
}

/// The step number the console's walkthrough picker shows ("Step 6: …").
fn picked_walk_step(h: &Harness<'static, TplabApp>) -> Option<usize> {
    h.query_all_by(|n| {
        n.value().is_some_and(|v| v.starts_with("Step "))
            || n.label().is_some_and(|v| v.starts_with("Step "))
    })
    .filter_map(|n| {
        let node = n.accesskit_node();
        let text = node.value().or(node.label())?;
        let digits: String = text["Step ".len()..]
            .chars()
            .filter(|c| *c != '\u{2068}' && *c != '\u{2069}')
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    })
    .next()
}

#[test]
fn the_console_follows_the_walkthrough_and_sends_the_room_to_its_step() {
    let room = class_of_one();
    let (mut teacher, mut student) = (room.teacher, room.student);
    // The teacher's scenario: TP 2, not the student's default.
    teacher.state_mut().shared.scenario.set_tp(2);
    // The teacher steps the walkthrough on the projector to step 10, then back to the console:
    // its picker offers the next prediction from there.
    assert!(teacher.state_mut().select("step"));
    teacher.run_steps(2);
    for _ in 0..9 {
        press(&mut teacher, egui::Key::ArrowRight, 1);
    }
    let at = teacher
        .state()
        .shared
        .walk_at
        .expect("the walkthrough's step");
    assert!(at >= 1, "stepped forward to {at}");
    assert!(teacher.state_mut().select("class"));
    teacher.run_steps(2);
    let picked = picked_walk_step(&teacher).expect("a prediction picked");
    assert!(
        picked > at,
        "the picker follows the walkthrough: step {} on screen, picked {picked}",
        at + 1
    );
    // Everyone to the step on the projector: the phone offers it, opens the walkthrough there
    // on the teacher's layer and TP, and comes back to the class with its state.
    let picked = at + 1;
    click(
        &mut teacher,
        &format!("Send everyone to step {picked} (on the projector now)"),
        2,
    );
    assert!(teacher
        .query_by_label(&format!("Sent: every device can open step {picked}."))
        .is_some());
    settle(&mut [&mut teacher, &mut student], "the push", |d| {
        class(d[1]).push.is_some()
    });
    student.run_steps(2);
    assert!(
        student
            .query_by_label_contains(&format!("Walkthrough, step {picked}"))
            .is_some(),
        "the phone names what the teacher shows"
    );
    click(&mut student, "Open it here", 3);
    assert_eq!(student.state().active_id(), "step");
    assert_eq!(student.state().shared.scenario.config().tp, 2);
    assert_eq!(
        student.state().shared.scenario.config(),
        teacher.state().shared.scenario.config()
    );
    assert_eq!(student.state().shared.walk_at, Some(picked - 1));
    click(&mut student, "‹ Back to the class", 2);
    assert!(student.query_by_label("Open it here").is_some());
    assert_eq!(class(&student).status, Status::Joined);
}

#[test]
fn a_turkish_phone_reads_the_english_teachers_questions_in_turkish() {
    let data = tempfile::tempdir().expect("a data folder");
    let exports = tempfile::tempdir().expect("an export folder");
    let server = Server::start(data.path());
    let mut teacher = device(server.teacher_link(), exports.path(), 1920.0, 1080.0);
    let mut student = device(server.student_link(), exports.path(), 390.0, 844.0);
    tplab::i18n::set_lang(&student.ctx, tplab_lessons::Lang::Tr);
    student.run_steps(2);
    click(&mut student, "Derse katıl", 2);
    settle(&mut [&mut teacher, &mut student], "both to join", |d| {
        d.iter().all(|h| class(h).status == Status::Joined) && class(d[0]).joined == 1
    });
    for (ask, source) in [
        ("Ask the room", "quiz:"),
        ("Ask the room this prediction", "walkthrough:"),
    ] {
        click(&mut teacher, ask, 2);
        // Both devices hear of the question from the server, each in its own time.
        settle(&mut [&mut teacher, &mut student], "the question", |d| {
            d.iter().all(|h| {
                class(h).question.as_ref().is_some_and(|q| {
                    q.view
                        .source
                        .as_deref()
                        .is_some_and(|s| s.starts_with(source))
                })
            })
        });
        teacher.run_steps(1);
        student.run_steps(1);
        let view = class(&student).question.clone().expect("asked").view;
        let tr = view
            .translations
            .iter()
            .find(|t| t.lang == "tr")
            .expect("the question carries Turkish")
            .clone();
        assert_ne!(
            tr.prompt, view.prompt,
            "{source}: Turkish differs from English"
        );
        // The teacher's console shows English; the phone Turkish, prompt and choices.
        assert!(teacher.query_by_label_contains(&view.prompt).is_some());
        assert!(
            student.query_by_label_contains(&tr.prompt).is_some(),
            "{source}: the Turkish prompt on the phone"
        );
        assert!(student.query_by_label_contains(&view.prompt).is_none());
        for (letter, text) in tplab_class::protocol::LETTERS.iter().zip(&tr.choices) {
            let shown = format!("{letter}   {text}");
            assert!(
                student.query_by_label(&shown).is_some(),
                "{source}: {shown:?} on the phone"
            );
        }
        // A vote from the Turkish phone counts for the same letter.
        click_choice(&mut student, "B");
        settle(&mut [&mut teacher, &mut student], "the vote", |d| {
            class(d[0])
                .question
                .as_ref()
                .is_some_and(|q| q.answered[0] == 1)
        });
    }
}

#[test]
fn a_student_sits_the_exam_in_class_and_the_server_grades_it() {
    let room = class_of_one();
    let (mut teacher, mut student) = (room.teacher, room.student);
    assert!(student
        .query_by_label("Take the certificate exam")
        .is_none());
    click(&mut teacher, "Open the exam to the room", 2);
    settle(&mut [&mut teacher, &mut student], "the exam to open", |d| {
        class(d[1]).exam.as_ref().is_some_and(|e| e.open)
    });
    // No issuer key in this class: graded, no certificate; the console and the phone say so.
    assert!(teacher
        .query_by_label_contains("it issues no certificates")
        .is_some());
    // The phone opens the sitting the server drew, in the Quiz view.
    click(&mut student, "Take the certificate exam", 2);
    settle(&mut [&mut teacher, &mut student], "the sitting", |d| {
        class(d[1]).exam_sitting.is_some()
    });
    student.run_steps(3);
    let seed = class(&student).exam_sitting.expect("a sitting");
    assert_eq!(student.state().active_id(), "quiz");
    let quiz: serde_json::Value =
        serde_json::from_str(&student.state().view_state("quiz").unwrap_or_default())
            .expect("the quiz's state");
    assert_eq!(
        quiz["sitting"]["seed"], seed,
        "the server's sitting, not a fresh draw"
    );
    // Submitted unanswered (after the confirmation): the server grades it, the phone is back
    // in the class with the grade, and the console counts it.
    click(&mut student, "Submit the exam", 2);
    click(&mut student, "Submit anyway", 2);
    settle(&mut [&mut teacher, &mut student], "the grade", |d| {
        class(d[1]).exam_result.is_some() && class(d[0]).exam_room == Some([1, 1, 0])
    });
    student.run_steps(3);
    // (The grade is shown on the class's page, which the phone is back on.)
    assert!(student
        .query_by_label_contains("Not passed: 0 of")
        .is_some());
    assert!(teacher
        .query_by_label("1 sittings started, 1 submitted, 0 passed")
        .is_some());
}

#[test]
fn phones_place_collectives_by_hand_and_a_refused_plan_reaches_the_projector() {
    let data = tempfile::tempdir().expect("a data folder");
    let exports = tempfile::tempdir().expect("an export folder");
    let server = Server::start(data.path());
    let mut teacher = device(server.teacher_link(), exports.path(), 1920.0, 1080.0);
    let mut a = device(server.student_link(), exports.path(), 390.0, 1600.0);
    let mut b = device(server.student_link(), exports.path(), 390.0, 1600.0);
    tplab::i18n::set_lang(&b.ctx, tplab_lessons::Lang::Tr);
    b.run_steps(2);
    click(&mut a, "Join the class", 2);
    click(&mut b, "Derse katıl", 2);
    settle(
        &mut [&mut teacher, &mut a, &mut b],
        "everyone to join",
        |d| d.iter().all(|h| class(h).status == Status::Joined) && class(d[0]).joined == 2,
    );
    click(&mut teacher, "Set this challenge", 2);
    settle(&mut [&mut teacher, &mut a, &mut b], "the challenge", |d| {
        d.iter().all(|h| class(h).challenge.is_some())
    });
    // A: fc1 by rows, collectives by hand and none placed: GeLU reads a partial sum.
    tap(&mut a, "Rows", 2);
    click(&mut a, "Place the collectives myself", 2);
    assert!(a.query_by_label("No collective placed yet.").is_some());
    tap(&mut a, "Check my plan", 0);
    // B (Turkish): Megatron's split, its all-reduce after fc2 placed by hand.
    tap(&mut b, "Sütunlar", 2);
    tap(&mut b, "Satırlar", 3);
    click(&mut b, "Kolektifleri ben yerleştireyim", 2);
    // The add row: all-reduce (the first kind) after fc2 (the last op).
    let fc2 = tplab::widgets::plan::site_words(
        tplab_lessons::Lang::Tr,
        tplab_engine::block::design::Site::Fc2,
    );
    assert_eq!(
        b.query_all_by_role(egui::accesskit::Role::ComboBox).count(),
        2,
        "the kind and op menus"
    );
    b.query_all_by_role(egui::accesskit::Role::ComboBox)
        .nth(1)
        .expect("the op menu")
        .click();
    b.run_steps(2);
    b.get_by_label(&fc2).click();
    b.run_steps(2);
    click(&mut b, "Ekle", 2);
    assert!(b
        .query_by_label(&format!("{fc2} sonrasında all-reduce"))
        .is_some());
    tap(&mut b, "Planımı denetle", 0);
    settle(&mut [&mut teacher, &mut a, &mut b], "both verdicts", |d| {
        d[1..].iter().all(|h| class(h).verdict.is_some())
            && class(d[0]).plans.as_ref().is_some_and(|p| p.submitted == 2)
    });
    a.run_steps(2);
    b.run_steps(2);
    assert_eq!(
        class(&a).verdict.as_ref().map(|v| v.group),
        Some(PlanGroup::Refused)
    );
    // (Attention stays whole in challenge 1: valid, no costlier than Megatron's, solved.)
    assert!(
        class(&b)
            .verdict
            .as_ref()
            .is_some_and(|v| v.group == PlanGroup::Valid && v.solved),
        "{:?}",
        class(&b).verdict
    );
    // The refusal on the English phone in the design lab's words.
    assert!(a.query_all_by_label_contains("GeLU on GPU").count() > 0);
    // The console: the most common mistake, and the refused plan on the projector: the design
    // lab with that plan.
    teacher.run_steps(2);
    assert!(teacher.query_all_by_label_contains("50% —").count() > 0);
    let room = class(&teacher).plans.clone().expect("plans");
    let refused = room
        .plans
        .iter()
        .position(|p| p.group == PlanGroup::Refused)
        .expect("the refused plan");
    tap(&mut teacher, "Show on the projector", refused);
    teacher.run_steps(2);
    assert_eq!(teacher.state().active_id(), "design");
    assert_eq!(
        teacher
            .state()
            .shared
            .design
            .plan()
            .split(tplab_engine::block::design::Weight::Fc1),
        tplab_engine::block::design::Split::Rows
    );
}
