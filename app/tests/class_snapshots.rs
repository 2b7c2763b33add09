//! The live class's two screens as a room sees them: a student's phone at 390×844 and the
//! teacher's console on a 1920×1080 projector, in English and Turkish. The class state comes
//! from a scripted run of the server's own messages (no socket: the pictures are the same on
//! every run); `class_room.rs` runs the real server. Regenerate with
//! `UPDATE_SNAPSHOTS=1 cargo test -p tplab --test class_snapshots`.

mod common;

use common::*;
use tplab::lab::class::ClassLink;
use tplab::TplabApp;
use tplab_class::protocol::*;
use tplab_lessons::Lang;

fn question(phase: Phase) -> QuestionView {
    QuestionView {
        id: 1,
        prompt: "After the all-reduce of the MLP's fc2 at TP 4, what does GPU 2 hold?".into(),
        source: Some("quiz:concepts/allreduce-holds".into()),
        body: QuestionBody::Choice {
            choices: [
                "A quarter of the sum (its own shard)",
                "The whole sum, the same as every other GPU",
                "Its partial sum, unchanged",
                "Nothing: the result is on GPU 0",
            ]
            .iter()
            .enumerate()
            .map(|(i, t)| ChoiceView {
                letter: LETTERS[i].into(),
                text: (*t).into(),
            })
            .collect(),
        },
        phase,
        seconds_left: None,
        // The teacher's app sends the course's other language with it.
        translations: vec![Translation {
            lang: "tr".into(),
            prompt: "TP 4'te MLP'nin fc2'sinin all-reduce'undan sonra GPU 2 ne tutar?".into(),
            choices: vec![
                "Toplamın dörtte biri (kendi parçası)".into(),
                "Bütün toplam, diğer her GPU ile aynı".into(),
                "Kendi kısmi toplamı, değişmeden".into(),
                "Hiçbir şey: sonuç GPU 0'dadır".into(),
            ],
            unit: None,
        }],
    }
}

/// The engine's English rule for GeLU reading a partial sum, as the server sends it.
const GELU_RULE: &str = "GeLU reads a partial sum: fc1 by rows leaves each GPU a part of the sum, \
                         and GeLU of a part is not a part of GeLU. Split fc1 by columns.";

/// Challenge 1's plan with fc1 and fc2 split so, the collectives placed by hand (`Some`) or by
/// the rules (`None`).
fn wire(fc1: &str, fc2: &str, collectives: Option<Vec<WireCollective>>) -> WirePlan {
    WirePlan {
        qkv: "replicate".into(),
        out: "replicate".into(),
        fc1: fc1.into(),
        fc2: fc2.into(),
        sequence_parallel: false,
        collectives,
    }
}

fn challenge() -> ChallengeView {
    ChallengeView {
        seq: 1,
        stage: 1,
        id: "mlp-one-all-reduce".into(),
        title: "The MLP with one all-reduce".into(),
        goal: "Split fc1 and fc2 so that the MLP needs a single all-reduce.".into(),
        free: vec!["fc1".into(), "fc2".into()],
        start: WirePlan {
            qkv: "replicate".into(),
            out: "replicate".into(),
            fc1: "replicate".into(),
            fc2: "replicate".into(),
            sequence_parallel: false,
            collectives: None,
        },
    }
}

/// The teacher's console after a whole round and a challenge: 28 students, both votes, the
/// answer, the room's plans.
fn teacher_app() -> TplabApp {
    let link = ClassLink::parse(&format!(
        "http://192.168.1.20:8036/#teacher={}",
        "5e".repeat(32)
    ))
    .expect("a teacher link");
    let mut app = TplabApp::default();
    app.join_class(None, link);
    let c = app.shared.class.as_mut().expect("joined");
    for m in [
        ServerMsg::TeacherWelcome {
            protocol: PROTOCOL_VERSION,
            room: RoomView {
                code: "K7QX2M".into(),
                anonymous: false,
                joined: 28,
                connected: 27,
                question: None,
                answered: 0,
                challenge: None,
                questions_asked: 0,
            },
        },
        ServerMsg::Question {
            question: question(Phase::Voting),
            round: Round::First,
        },
        ServerMsg::Distribution {
            question: 1,
            round: Round::First,
            dist: Dist::Choice {
                counts: vec![9, 12, 6, 1],
            },
            first: None,
            moves: None,
        },
        ServerMsg::Question {
            question: question(Phase::Revoting),
            round: Round::Second,
        },
        ServerMsg::Distribution {
            question: 1,
            round: Round::Second,
            dist: Dist::Choice {
                counts: vec![4, 21, 2, 0],
            },
            first: Some(Dist::Choice {
                counts: vec![9, 12, 6, 1],
            }),
            moves: None,
        },
        ServerMsg::Answer {
            question: 1,
            answer: AnswerView::Choice {
                answer: 1,
                letter: "B".into(),
            },
            summary: Summary {
                right_first: 12,
                voted_first: 28,
                right_second: 21,
                voted_second: 27,
                wrong_to_right: 10,
                right_to_wrong: 1,
                stayed_right: 11,
                stayed_wrong: 5,
                around_first: None,
                around_second: None,
            },
        },
        ServerMsg::Challenge {
            challenge: challenge(),
        },
        ServerMsg::Plans {
            room: PlanRoom {
                challenge: 1,
                submitted: 24,
                groups: vec![
                    GroupCount {
                        group: PlanGroup::Valid,
                        count: 14,
                    },
                    GroupCount {
                        group: PlanGroup::Costly,
                        count: 3,
                    },
                    GroupCount {
                        group: PlanGroup::Refused,
                        count: 7,
                    },
                ],
                refusals: vec![RefusalCount {
                    rule: GELU_RULE.into(),
                    count: 5,
                    percent: 21,
                }],
                plans: vec![
                    PlanEntry {
                        plan_id: 1,
                        group: PlanGroup::Megatron,
                        describe: String::new(),
                        plan: wire("columns", "rows", None),
                        refusal: None,
                        solved: true,
                    },
                    PlanEntry {
                        plan_id: 2,
                        group: PlanGroup::Refused,
                        describe: String::new(),
                        plan: wire("rows", "columns", Some(vec![])),
                        refusal: Some(GELU_RULE.into()),
                        solved: false,
                    },
                ],
            },
        },
    ] {
        c.state.apply(m);
    }
    app
}

/// A student's phone in the second vote, having voted A then B (`answered`: and the answer,
/// B, is out).
fn student_app(answered: bool) -> TplabApp {
    let link = ClassLink::parse("http://192.168.1.20:8036/?class=K7QX2M").expect("a join link");
    let mut app = TplabApp::default();
    app.join_class(None, link);
    let c = app.shared.class.as_mut().expect("joined");
    c.start();
    c.close();
    for m in [
        ServerMsg::Welcome {
            protocol: PROTOCOL_VERSION,
            student: 7,
            token: "t".into(),
            name: "Ayşe".into(),
            anonymous: false,
            question: Some(question(Phase::Voting)),
            votes: vec![(Round::First, VoteValue::Choice { choice: 0 })],
            challenge: None,
        },
        ServerMsg::Question {
            question: question(Phase::Revoting),
            round: Round::Second,
        },
        ServerMsg::VoteAck {
            question: 1,
            round: Round::Second,
            vote: VoteValue::Choice { choice: 1 },
        },
        ServerMsg::Challenge {
            challenge: challenge(),
        },
    ] {
        c.state.apply(m);
    }
    if answered {
        // The teacher then sends the room to a walkthrough step.
        let config = tplab_engine::config::Config {
            tp: 4,
            ..Default::default()
        };
        c.state.apply(ServerMsg::Push {
            target: tplab::lab::class::PushTarget::walk(&config, 24).to_target(),
            title: Some("Walkthrough, step 24".into()),
        });
        c.state.challenge = None;
        c.state.apply(ServerMsg::Answer {
            question: 1,
            answer: AnswerView::Choice {
                answer: 1,
                letter: "B".into(),
            },
            summary: Summary {
                right_first: 12,
                voted_first: 28,
                right_second: 21,
                voted_second: 27,
                wrong_to_right: 10,
                right_to_wrong: 1,
                stayed_right: 11,
                stayed_wrong: 5,
                around_first: None,
                around_second: None,
            },
        });
    }
    app
}

#[test]
fn the_students_phone_at_390x844() {
    let mut failed = Vec::new();
    for (lang, answered) in [
        (Lang::En, false),
        (Lang::Tr, false),
        (Lang::En, true),
        (Lang::Tr, true),
    ] {
        let mut h = gl_harness(student_app(answered), 390.0, 844.0);
        tplab::i18n::set_lang(&h.ctx, lang);
        h.run_steps(4);
        // One column: nothing is wider than the phone.
        let content = h.ctx.content_rect();
        assert!(content.width() <= 390.5, "{content:?}");
        let name = format!(
            "class_student{}_390x844_{}",
            if answered { "_answer" } else { "" },
            lang.code()
        );
        if let Err(e) = h.try_snapshot_options(&name, &snapshot_options()) {
            failed.push(e.to_string());
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// "Open it here" on what the teacher pushed: the phone shows the walkthrough at that step,
/// with "Back to the class" on top.
#[test]
fn the_students_phone_away_at_the_pushed_step() {
    let mut failed = Vec::new();
    for lang in [Lang::En, Lang::Tr] {
        let mut h = gl_harness(student_app(true), 390.0, 844.0);
        tplab::i18n::set_lang(&h.ctx, lang);
        h.run_steps(2);
        let open = if lang == Lang::En {
            "Open it here"
        } else {
            "Burada aç"
        };
        click(&mut h, open, 4);
        assert_eq!(h.state().active_id(), "step");
        assert_eq!(h.state().shared.walk_at, Some(23));
        let name = format!("class_student_away_390x844_{}", lang.code());
        if let Err(e) = h.try_snapshot_options(&name, &snapshot_options()) {
            failed.push(e.to_string());
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn the_teachers_console_at_1920x1080() {
    let mut failed = Vec::new();
    for lang in [Lang::En, Lang::Tr] {
        let mut h = gl_harness(teacher_app(), 1920.0, 1080.0);
        tplab::i18n::set_lang(&h.ctx, lang);
        h.run_steps(4);
        let name = format!("class_console_1920x1080_{}", lang.code());
        let hh = h.ctx.content_rect().height();
        h.mask(egui::Rect::from_min_max(
            egui::pos2(0.0, 0.0),
            egui::pos2(tplab::app::SIDE_BAR_WIDTH + 2.0, hh),
        ));
        if let Err(e) = h.try_snapshot_options(&name, &snapshot_options()) {
            failed.push(e.to_string());
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
