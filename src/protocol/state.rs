//! The thread state machine (SPEC §6).

use serde::{Deserialize, Serialize};

/// A thread's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Forward line, step 0.
    Open,
    /// Forward line, step 1.
    Answered,
    /// Forward line, step 2.
    Decided,
    /// Forward line, step 3; locks once confirmed.
    Closed,
    /// Side state.
    Deferred,
    /// Side state.
    Obsolete,
    /// Side state.
    Rejected,
}

impl State {
    /// The forward line, in order.
    pub const FORWARD: [State; 4] = [State::Open, State::Answered, State::Decided, State::Closed];
    /// The side states.
    pub const SIDE: [State; 3] = [State::Deferred, State::Obsolete, State::Rejected];

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            State::Open => "open",
            State::Answered => "answered",
            State::Decided => "decided",
            State::Closed => "closed",
            State::Deferred => "deferred",
            State::Obsolete => "obsolete",
            State::Rejected => "rejected",
        }
    }

    /// The state with this wire name.
    pub fn from_name(name: &str) -> Option<State> {
        Self::FORWARD
            .into_iter()
            .chain(Self::SIDE)
            .find(|s| s.as_str() == name)
    }

    /// Position on the forward line; `None` for a side state.
    pub fn rank(self) -> Option<u8> {
        Self::FORWARD
            .iter()
            .position(|s| *s == self)
            .map(|i| i as u8)
    }

    /// Whether this is a side state.
    pub fn is_side(self) -> bool {
        self.rank().is_none()
    }

    /// A stable one-byte code, for storage keys and records.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The state of a [`State::code`].
    pub fn from_code(code: u8) -> Option<State> {
        Self::FORWARD
            .into_iter()
            .chain(Self::SIDE)
            .find(|s| s.code() == code)
    }
}

/// What a marking act does to a thread's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Move to the state.
    Move(State),
    /// The state stays and becomes confirmed.
    Confirm,
    /// Recorded, no state change.
    None,
}

/// The effect of a content act that marks (`answer`, `decide`) towards `target`.
/// Never refuses: past or side states simply keep their state (§6).
pub(crate) fn content_mark(
    current: State,
    confirmed: bool,
    target: State,
    confirmer: bool,
) -> Effect {
    if current == target {
        return if !confirmed && confirmer {
            Effect::Confirm
        } else {
            Effect::None
        };
    }
    match (current.rank(), target.rank()) {
        (Some(c), Some(t)) if t > c => Effect::Move(target),
        _ => Effect::None,
    }
}

/// The effect of `mark` to `target`, or `Err(())` for `invalid_transition`.
#[allow(clippy::result_unit_err)] // one way to fail; the engine names it
pub(crate) fn mark(
    current: State,
    confirmed: bool,
    target: State,
    confirmer: bool,
    human: bool,
) -> Result<Effect, ()> {
    // Only a human may name `open` in a mark (§6); others reopen.
    if target == State::Open && !human {
        return Err(());
    }
    // Naming the current state: a confirmer confirms it, or, when it is already
    // confirmed, the mark is recorded and changes nothing (§6 refuses it only to
    // non-confirmers).
    if current == target {
        return match (confirmer, confirmed) {
            (false, _) => Err(()),
            (true, false) => Ok(Effect::Confirm),
            (true, true) => Ok(Effect::None),
        };
    }
    if human {
        return Ok(Effect::Move(target));
    }
    match (current.rank(), target.rank()) {
        (Some(c), Some(t)) if t > c => Ok(Effect::Move(target)),
        (Some(_), None) => Ok(Effect::Move(target)),
        _ => Err(()),
    }
}

/// Whether `reopen` applies to a thread in `current`.
pub(crate) fn reopenable(current: State) -> bool {
    current == State::Closed || current.is_side()
}

#[cfg(test)]
mod tests {
    use super::*;
    use State::*;

    #[test]
    fn llm_marks_go_forward_or_aside() {
        assert_eq!(
            mark(Open, true, Closed, false, false),
            Ok(Effect::Move(Closed))
        );
        assert_eq!(mark(Decided, true, Answered, true, false), Err(()));
        assert_eq!(
            mark(Answered, true, Deferred, false, false),
            Ok(Effect::Move(Deferred))
        );
        assert_eq!(mark(Deferred, true, Obsolete, true, false), Err(()));
        assert_eq!(mark(Deferred, true, Closed, true, false), Err(()));
        assert_eq!(mark(Answered, false, Open, true, false), Err(()));
        assert_eq!(mark(Open, false, Open, true, false), Err(()));
    }

    #[test]
    fn repeating_a_state_confirms_only_for_confirmers() {
        assert_eq!(
            mark(Answered, false, Answered, true, false),
            Ok(Effect::Confirm)
        );
        assert_eq!(mark(Answered, false, Answered, false, false), Err(()));
        assert_eq!(mark(Answered, true, Answered, true, true), Ok(Effect::None));
        assert_eq!(
            mark(Deferred, true, Deferred, true, false),
            Ok(Effect::None)
        );
        assert_eq!(mark(Answered, true, Answered, false, false), Err(()));
    }

    #[test]
    fn humans_re_mark_anything() {
        assert_eq!(
            mark(Closed, false, Open, true, true),
            Ok(Effect::Move(Open))
        );
        assert_eq!(
            mark(Rejected, true, Answered, true, true),
            Ok(Effect::Move(Answered))
        );
    }

    #[test]
    fn content_marks_never_refuse() {
        assert_eq!(
            content_mark(Open, true, Answered, false),
            Effect::Move(Answered)
        );
        assert_eq!(content_mark(Decided, true, Answered, true), Effect::None);
        assert_eq!(content_mark(Deferred, true, Decided, true), Effect::None);
        assert_eq!(
            content_mark(Answered, false, Answered, true),
            Effect::Confirm
        );
    }
}
