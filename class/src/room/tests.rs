use super::*;

fn room() -> Room {
    Room::open(Store::in_memory().unwrap(), false, false).unwrap()
}

fn choice_q(answer: u32) -> QuestionSpec {
    QuestionSpec {
        prompt: "After the all-reduce, what does GPU 2 hold?".into(),
        source: Some("walkthrough:4".into()),
        kind: QuestionKind::Choice {
            choices: vec![
                "its partial sum".into(),
                "the whole sum".into(),
                "nothing".into(),
            ],
            answer,
        },
        timer_s: None,
        translations: Vec::new(),
    }
}

fn join(r: &mut Room, name: &str) -> u32 {
    let code = r.code.clone();
    r.join(&code, Some(name), None).unwrap().0
}

fn msgs(outs: &[Out]) -> Vec<&ServerMsg> {
    outs.iter().map(|o| &o.msg).collect()
}

#[test]
fn the_peer_instruction_loop() {
    let mut r = room();
    let a = join(&mut r, "Ada");
    let b = join(&mut r, "Bo");
    let c = join(&mut r, "Cem");
    let posed = r.pose(choice_q(1)).unwrap();
    let ServerMsg::Question {
        question: first_view,
        round: Round::First,
    } = &posed[0].msg
    else {
        panic!("{posed:?}")
    };
    // Round 1: A, A, B; the teacher sees only counts.
    r.vote(a, 1, Some(0), None).unwrap();
    r.vote(b, 1, Some(0), None).unwrap();
    let outs = r.vote(c, 1, Some(1), None).unwrap();
    assert!(matches!(
        msgs(&outs)[1],
        ServerMsg::Count {
            answered: 3,
            round: Round::First,
            ..
        }
    ));
    // No revote before the first distribution; no answer before any distribution.
    assert_eq!(r.revote(None).unwrap_err().code, ErrorCode::WrongPhase);
    assert_eq!(r.reveal_answer().unwrap_err().code, ErrorCode::WrongPhase);
    let outs = r.reveal().unwrap();
    assert!(matches!(
        &outs[0].msg,
        ServerMsg::Distribution { dist: Dist::Choice { counts }, first: None, .. } if counts == &vec![2, 1, 0]
    ));
    assert_eq!(outs[0].to, To::Teachers);
    // Votes are closed between rounds.
    assert_eq!(
        r.vote(a, 1, Some(1), None).unwrap_err().code,
        ErrorCode::WrongPhase
    );
    let outs = r.revote(None).unwrap();
    let ServerMsg::Question {
        question: second_view,
        round: Round::Second,
    } = &outs[0].msg
    else {
        panic!("{outs:?}")
    };
    // Same choices, same order, same letters.
    assert_eq!(first_view.body, second_view.body);
    // Round 2: Ada moves to the right answer, Bo stays wrong, Cem stays right.
    r.vote(a, 1, Some(1), None).unwrap();
    r.vote(b, 1, Some(0), None).unwrap();
    r.vote(c, 1, Some(1), None).unwrap();
    let outs = r.reveal().unwrap();
    let ServerMsg::Distribution {
        dist,
        first,
        moves,
        round,
        ..
    } = &outs[0].msg
    else {
        panic!("{outs:?}")
    };
    assert_eq!(*round, Round::Second);
    assert_eq!(
        dist,
        &Dist::Choice {
            counts: vec![1, 2, 0]
        }
    );
    assert_eq!(
        first,
        &Some(Dist::Choice {
            counts: vec![2, 1, 0]
        })
    );
    let moves = moves.clone().unwrap();
    assert_eq!(moves[0][1], 1, "A → B once");
    assert_eq!(moves[0][0], 1, "A → A once");
    assert_eq!(moves[1][1], 1, "B → B once");
    let outs = r.reveal_answer().unwrap();
    let ServerMsg::Answer {
        answer, summary, ..
    } = &outs[0].msg
    else {
        panic!()
    };
    assert_eq!(outs[0].to, To::All);
    assert_eq!(
        answer,
        &AnswerView::Choice {
            answer: 1,
            letter: "B".into()
        }
    );
    assert_eq!((summary.right_first, summary.right_second), (1, 2));
    assert_eq!((summary.wrong_to_right, summary.right_to_wrong), (1, 0));
    assert_eq!((summary.stayed_right, summary.stayed_wrong), (1, 1));
}

#[test]
fn one_vote_per_student_per_round() {
    let mut r = room();
    let a = join(&mut r, "Ada");
    r.pose(choice_q(0)).unwrap();
    for choice in [0, 1, 2, 1] {
        let outs = r.vote(a, 1, Some(choice), None).unwrap();
        assert!(matches!(
            msgs(&outs)[1],
            ServerMsg::Count { answered: 1, .. }
        ));
    }
    // The same token on a second device is the same student.
    let token = r.students[0].token.clone();
    let code = r.code.clone();
    let (again, outs) = r.join(&code, Some("Someone else"), Some(&token)).unwrap();
    assert_eq!(again, a);
    let ServerMsg::Welcome { votes, name, .. } = &outs[0].msg else {
        panic!()
    };
    assert_eq!(name, "Ada");
    assert_eq!(
        votes,
        &vec![(Round::First, VoteValue::Choice { choice: 1 })]
    );
    let outs = r.vote(again, 1, Some(0), None).unwrap();
    assert!(matches!(
        msgs(&outs)[1],
        ServerMsg::Count { answered: 1, .. }
    ));
    assert_eq!(r.joined(), 1);
}

#[test]
fn bad_votes_name_the_rule() {
    let mut r = room();
    let a = join(&mut r, "Ada");
    assert_eq!(
        r.vote(a, 1, Some(0), None).unwrap_err().code,
        ErrorCode::NoQuestion
    );
    r.pose(choice_q(0)).unwrap();
    assert_eq!(
        r.vote(a, 2, Some(0), None).unwrap_err().code,
        ErrorCode::NoQuestion
    );
    assert_eq!(
        r.vote(a, 1, Some(7), None).unwrap_err().code,
        ErrorCode::BadVote
    );
    assert_eq!(
        r.vote(a, 1, None, Some(1.0)).unwrap_err().code,
        ErrorCode::BadVote
    );
    assert_eq!(
        r.vote(a, 1, Some(0), Some(1.0)).unwrap_err().code,
        ErrorCode::BadVote
    );
}

#[test]
fn numeric_questions_show_histograms() {
    let mut r = room();
    let ids: Vec<u32> = (0..6).map(|i| join(&mut r, &format!("s{i}"))).collect();
    r.pose(QuestionSpec {
        prompt: "How many GB does each GPU hold?".into(),
        source: None,
        kind: QuestionKind::Numeric {
            answer: 40.0,
            tolerance: 1.0,
            unit: Some("GB".into()),
        },
        timer_s: None,
        translations: Vec::new(),
    })
    .unwrap();
    for (s, v) in ids.iter().zip([10.0, 20.0, 40.0, 40.5, 80.0, 1e6]) {
        r.vote(*s, 1, None, Some(v)).unwrap();
    }
    assert_eq!(
        r.vote(ids[0], 1, None, Some(f64::INFINITY))
            .unwrap_err()
            .code,
        ErrorCode::BadVote
    );
    let outs = r.reveal().unwrap();
    let ServerMsg::Distribution {
        dist: Dist::Histogram { bins },
        ..
    } = &outs[0].msg
    else {
        panic!()
    };
    assert_eq!(bins.iter().map(|b| b.count).sum::<u32>(), 6);
    assert!(
        bins.iter().all(|b| !b.right),
        "no hint of the answer before the reveal"
    );
    r.revote(None).unwrap();
    for s in &ids {
        r.vote(*s, 1, None, Some(40.0)).unwrap();
    }
    r.reveal().unwrap();
    let outs = r.reveal_answer().unwrap();
    let ServerMsg::Answer { summary, .. } = &outs[0].msg else {
        panic!()
    };
    let around = summary.around_first.clone().unwrap();
    assert_eq!(around.len(), 11);
    let right: Vec<&Bin> = around.iter().filter(|b| b.right).collect();
    assert_eq!(right.len(), 1);
    assert_eq!(right[0].count, 2, "40 and 40.5 are within ±1");
    assert_eq!(around.iter().map(|b| b.count).sum::<u32>(), 6);
    assert_eq!(around[10].count, 2, "80 and 1e6 are above the bins");
    assert_eq!(summary.wrong_to_right, 4);
    assert_eq!(summary.right_second, 6);
}

#[test]
fn the_timer_closes_the_vote() {
    let mut r = room();
    let a = join(&mut r, "Ada");
    let mut q = choice_q(0);
    q.timer_s = Some(30);
    let outs = r.pose(q).unwrap();
    let ServerMsg::Question { question, .. } = &outs[0].msg else {
        panic!()
    };
    assert!(question
        .seconds_left
        .is_some_and(|s| (29..=30).contains(&s)));
    // Time passes.
    if let Some(q) = r.questions.last_mut() {
        q.deadline_ms = Some(now_ms() - 1);
    }
    assert_eq!(
        r.vote(a, 1, Some(0), None).unwrap_err().code,
        ErrorCode::TimeUp
    );
}

#[test]
fn names_codes_and_the_end_of_a_class() {
    let mut r = room();
    let code = r.code.clone();
    assert_eq!(code.len(), CODE_LEN);
    assert_eq!(
        r.join(&code, Some("a\u{202E}b"), None).unwrap_err().code,
        ErrorCode::BadName
    );
    assert_eq!(
        r.join(&code, Some(&"x".repeat(40)), None).unwrap_err().code,
        ErrorCode::BadName
    );
    assert_eq!(
        r.join("ZZZZZZ", None, None).unwrap_err().code,
        ErrorCode::BadCode
    );
    // Typed in lower case with a space: still the code.
    let typed = format!("{} {}", &code[..3], &code[3..]).to_lowercase();
    let (id, _) = r.join(&typed, None, None).unwrap();
    assert_eq!(r.students[(id - 1) as usize].name, format!("Student {id}"));
    r.end().unwrap();
    assert_eq!(
        r.join(&code, None, None).unwrap_err().code,
        ErrorCode::ClassEnded
    );
}

#[test]
fn anonymous_classes_drop_names() {
    let r = Room::open(Store::in_memory().unwrap(), true, false);
    let mut r = r.unwrap();
    let code = r.code.clone();
    let (id, outs) = r.join(&code, Some("Ada"), None).unwrap();
    let ServerMsg::Welcome {
        name, anonymous, ..
    } = &outs[0].msg
    else {
        panic!()
    };
    assert!(*anonymous);
    assert_eq!(name, &format!("Student {id}"));
}

#[test]
fn secrets_compare_whole() {
    let r = room();
    let s = r.secret().to_string();
    assert_eq!(s.len(), 64);
    assert!(r.is_teacher_secret(&s));
    assert!(!r.is_teacher_secret(&s[..63]));
    assert!(!r.is_teacher_secret(""));
    let mut wrong = s.clone().into_bytes();
    wrong[63] = if wrong[63] == b'0' { b'1' } else { b'0' };
    assert!(!r.is_teacher_secret(&String::from_utf8(wrong).unwrap()));
}

#[test]
fn a_restarted_room_resumes_the_class() {
    let dir = tempfile::tempdir().unwrap();
    let (code, token, a) = {
        let mut r = Room::open(Store::open(dir.path()).unwrap(), false, false).unwrap();
        let a = join(&mut r, "Ada");
        r.pose(choice_q(2)).unwrap();
        r.vote(a, 1, Some(2), None).unwrap();
        (r.code.clone(), r.students[0].token.clone(), a)
    };
    let mut r = Room::open(Store::open(dir.path()).unwrap(), false, false).unwrap();
    assert!(r.resumed);
    assert_eq!(r.code, code);
    let (id, outs) = r.join(&code, None, Some(&token)).unwrap();
    assert_eq!(id, a);
    let ServerMsg::Welcome {
        votes, question, ..
    } = &outs[0].msg
    else {
        panic!()
    };
    assert_eq!(
        votes,
        &vec![(Round::First, VoteValue::Choice { choice: 2 })]
    );
    assert_eq!(question.as_ref().map(|q| q.phase), Some(Phase::Voting));
    // A new class ends the old one: its code is dead.
    let r2 = Room::open(Store::open(dir.path()).unwrap(), false, true).unwrap();
    assert_ne!(r2.class_id, r.class_id);
    assert!(!r2.resumed);
}
