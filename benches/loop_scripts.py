"""The scripts of ``benches/loops.py``: loop shapes that multi-agent systems fall
into, and conversations a team really has.

A script is a function of a :class:`Play` (see ``loops.py``). A loop script posts its
opening through ``p.setup`` and then loops through ``p.say`` for ever: the play ends
it when the forum refuses a post or when the cap of messages is reached. A
legitimate script posts every message through ``p.say``; ``due=True`` marks a reply
that the thread's turn asks of its author, and the play checks that the turn really
names it, so a script that speaks out of turn is a bug of the script, not a refusal
of the forum.

Every body of a legitimate script is one a real participant would write: no two
messages by different authors say the same thing, and a person speaks in the long
thread from time to time, as people do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, List, Tuple

if TYPE_CHECKING:  # pragma: no cover - only for the type checker
    from loops import Play

Script = Callable[["Play"], None]

# Loop shapes -------------------------------------------------------------------------

#: Acknowledgements drawn in turn by both agents ("Thanks!" / "Thank you, noted." /
#: "Great, thanks!", as in the reports of the issue).
ACKS = ["Thanks!", "Thank you, noted.", "Great, thanks!", "Much appreciated.", "Thanks, that helps."]


def ack_ping_pong(p: "Play") -> None:
    """Two agents trading acknowledgements after a question was answered."""
    root = p.setup("alice", "ask", "Can you rerun the flaky upload test on main and tell me if it passes?", to="bob")
    last = p.setup("bob", "answer", "Reran it 20 times on main at a3f9c21: all green.", parent=root["id"])
    speakers = ("alice", "bob")
    j = 0
    while True:
        last = p.say(speakers[j % 2], "note", ACKS[j % len(ACKS)], parent=last["id"])
        j += 1


RELEASE_BLOCKERS = [
    "The schema migration needs a backfill before it can run.",
    "The Windows installer is still unsigned.",
    "Two integration tests time out on the ARM runners.",
    "The changelog is missing the breaking change to tokens.",
    "The docs still describe the old --port flag.",
    "The search index rebuild takes 40 minutes on the big fixture.",
    "Nobody has checked the upgrade path from 2.2.",
    "The metrics endpoint leaks the database URL.",
    "The Debian package depends on an old OpenSSL.",
    "The release notes have no owner yet.",
]


def echo(p: "Play") -> None:
    """One agent echoing another's words back (case and punctuation changed)."""
    root = p.setup("carol", "ask", "What still blocks the 2.4 release?")
    last = root
    i = 0
    while True:
        said = p.say("alice", "note", RELEASE_BLOCKERS[i % len(RELEASE_BLOCKERS)], parent=last["id"])
        last = p.say("bob", "note", said["body"].lower().replace(".", "!"), parent=said["id"])
        i += 1


PARAPHRASES = {
    "alice": [
        "PostgreSQL is the better home for the job queue.",
        "I still think the queue belongs in Postgres.",
        "Postgres handles this queue load more safely.",
        "We should put the job queue on PostgreSQL.",
        "My view stands: use Postgres for the queue.",
    ],
    "bob": [
        "SQLite is enough for the job queue.",
        "The queue does not need more than SQLite.",
        "Staying on SQLite keeps the queue simple.",
        "I would keep the job queue in SQLite.",
        "SQLite copes with this queue just fine.",
    ],
}


def paraphrase_rotation(p: "Play") -> None:
    """Two agents each cycling through 5 paraphrases of their position: no body is
    the same as the author's previous one, and none the same as the other's."""
    root = p.setup("carol", "ask", "Which database should the job queue use?")
    last = root
    j = 0
    while True:
        who = ("alice", "bob")[j % 2]
        last = p.say(who, "note", PARAPHRASES[who][(j // 2) % 5], parent=last["id"])
        j += 1


HANDOFFS = {
    "bob": ["Not mine: carol owns the deploy scripts.", "Carol knows the deploy job better than I do.", "Passing this to carol, she set up staging."],
    "carol": ["Not mine either: alice changed the pipeline last.", "Alice wrote that stage, over to her.", "This looks like alice's pipeline change."],
    "alice": ["Bob is on call this week, handing it back.", "Bob should look at it, he has the logs.", "Back to bob: the failing host is his."],
}
NEXT_IN_RING = {"bob": "carol", "carol": "alice", "alice": "bob"}


def handoff_triangle(p: "Play") -> None:
    """A ring of handoffs A -> B -> C -> A, each agent varying its words."""
    last = p.setup("alice", "ask", "Who owns the nightly deploy failure on staging?", to="bob")
    who, j = "bob", 0
    while True:
        nxt = NEXT_IN_RING[who]
        last = p.say(who, "handoff", HANDOFFS[who][(j // 3) % 3], to=p.identity(nxt), parent=last["id"])
        who, j = nxt, j + 1


OBJECTIONS = {
    "bob": [
        "1.80 is too new: Debian stable ships 1.75.",
        "Bumping the MSRV breaks the downstream distro builds.",
        "LazyLock is not worth dropping older toolchains.",
        "Users on LTS distributions cannot build 1.80 code.",
    ],
    "alice": [
        "Debian users can install rustup; the MSRV policy allows it.",
        "once_cell is a dependency we want gone, 1.80 does that.",
        "The distro builds already vendor a newer rustc.",
        "Our MSRV policy is latest minus two, which is 1.80.",
    ],
}


def objection_ping_pong(p: "Play") -> None:
    """Two agents objecting to each other's last objection."""
    root = p.setup("carol", "ask", "Should we bump the minimum Rust version to 1.80?")
    last = p.setup("alice", "answer", "Yes: 1.80 gives us LazyLock and we can drop once_cell.", parent=root["id"])
    j = 0
    while True:
        who = ("bob", "alice")[j % 2]
        last = p.say(who, "object", OBJECTIONS[who][(j // 2) % 4], parent=last["id"])
        j += 1


PLUS_ONES = {
    "alice": ["+1", "+1, same here", "+1 from me too"],
    "bob": ["+1, seeing it on CI as well", "+1 here", "Same problem, +1"],
    "carol": ["+1 (fails on my branch)", "Also hitting this, +1", "+1, blocks me too"],
    "dave": ["+1 on macOS", "Me too, +1", "+1 still failing"],
    "erin": ["+1 from the docs team", "+1 again today", "+1, reproduced"],
}


def five_plus_ones(p: "Play") -> None:
    """Five agents adding "+1" notes to a question, each varying its words."""
    root = p.setup("frank", "ask", "Release 2.4 is blocked by the flaky upload test; is anyone else seeing it?")
    agents = list(PLUS_ONES)
    j = 0
    while True:
        who = agents[j % 5]
        p.say(who, "note", PLUS_ONES[who][(j // 5) % 3], thread=root["thread"])
        j += 1


PROPOSALS = [
    "Proposal: page by offset and limit, like the admin API.",
    "Proposal: opaque cursors, with a limit of at most 200.",
    "Proposal: page by created_at, clients pass the last timestamp.",
    "Proposal: keyset paging on the event id.",
]
COUNTERS = [
    "Offsets skip events when new ones arrive between pages.",
    "Opaque cursors hide too much: clients cannot resume from logs.",
    "Timestamps collide: two events share a millisecond.",
    "Event ids are not ordered across shards.",
]


def propose_object(p: "Play") -> None:
    """A pair alternating ``propose`` and ``object`` without ever converging."""
    last = p.setup("carol", "ask", "How should the events API paginate?")
    j = 0
    while True:
        if j % 2 == 0:
            last = p.say("alice", "propose", PROPOSALS[(j // 2) % 4], parent=last["id"])
        else:
            last = p.say("bob", "object", COUNTERS[(j // 2) % 4], parent=last["id"])
        j += 1


LOOPS: List[Tuple[str, Script]] = [
    ("ack ping-pong", ack_ping_pong),
    ("echo", echo),
    ("paraphrase rotation of 5", paraphrase_rotation),
    ("handoff triangle", handoff_triangle),
    ("objection ping-pong", objection_ping_pong),
    ("five agents adding +1", five_plus_ones),
    ("propose / object pair", propose_object),
]

# Legitimate conversations ------------------------------------------------------------


def question_decided(p: "Play") -> None:
    """A question answered, acknowledged and decided by its asker."""
    root = p.say("alice", "ask", "Which port does the dev server listen on after the config change?")
    answer = p.say("bob", "answer", "7878; it moved from 8080 in commit 4be1c2a.", parent=root["id"], due=True)
    p.say("alice", "note", "Thanks, that matches what I see locally.", parent=answer["id"])
    p.say("alice", "decide", "Decided: docs and scripts use port 7878.", parent=answer["id"], due=True)


def design_debate(p: "Play") -> None:
    """Twenty messages of a design debate among four agents, ending in a decision."""
    say = p.say
    root = say("alice", "ask", "Design: after a disconnect, how should a client resume the event stream without missing or repeating events?")
    m2 = say("bob", "propose", "Proposal: every event carries an increasing cursor; the client reconnects with since=<last cursor> and the server replays from there.", parent=root["id"])
    m3 = say("carol", "object", "Cursors alone break when the server compacts old events: a client away for a week asks for a cursor that no longer exists.", parent=m2["id"])
    m4 = say("bob", "answer", "Then an expired cursor gets a distinct error, cursor_expired, and the client does a full resync; replays stay exact otherwise.", parent=m3["id"], due=True)
    m5 = say("dave", "object", "A full resync of a large forum is minutes of traffic; clients on flaky mobile links would resync all day.", parent=m4["id"])
    m6 = say("bob", "ask", "How long do mobile clients stay away in your logs? If it is under a day, keeping 7 days of events covers them.", parent=m5["id"], to=p.identity("dave"), due=True)
    m7 = say("dave", "answer", "The p99 absence is 31 hours; 0.2 % of clients stay away longer than 3 days.", parent=m6["id"], due=True)
    m8 = say("bob", "propose", "Then: cursors, 7 days of retention, cursor_expired beyond that, and a full resync only then.", parent=m7["id"], due=True)
    say("carol", "note", "Retaining 7 days is about 2 GB at today's event rate; the disk budget allows it.", parent=m8["id"])
    m10 = say("alice", "ask", "Does the 2 GB include the search index entries for those events, or only the event rows?", parent=m8["id"], to=p.identity("carol"))
    say("carol", "answer", "Only the rows; with the index it is about 3.1 GB, still inside the 5 GB budget.", parent=m10["id"], due=True)
    m12 = say("dave", "object", "Server-Sent Events already define Last-Event-ID; a since parameter as well means two ways to resume.", parent=m8["id"])
    m13 = say("bob", "answer", "Agreed: accept Last-Event-ID on the stream and since on the polling endpoint, both holding the same cursor.", parent=m12["id"], due=True)
    m14 = say("carol", "object", "If both are sent and disagree, which wins? Without a rule clients will see duplicates.", parent=m13["id"])
    m15 = say("bob", "answer", "Last-Event-ID wins on the stream and since is ignored there; the polling endpoint has no header to conflict with.", parent=m14["id"], due=True)
    say("alice", "note", "That rule goes into the resume section of the API doc.", parent=m15["id"])
    say("dave", "note", "Then I withdraw my objection: one cursor format for both is what I wanted.", parent=m15["id"])
    m18 = say("carol", "propose", "Summary for the decision: one cursor per event; Last-Event-ID on the stream, since on polling; 7 days retained; cursor_expired, then a full resync.", parent=m8["id"])
    say("bob", "note", "Agreed with the summary; I can take the server side this sprint.", parent=m18["id"])
    say("alice", "decide", "Decided: resume by cursor (Last-Event-ID on the stream, since on polling), 7 days of retention, cursor_expired and a full resync beyond that. Bob owns the server side.", parent=m18["id"], due=True)


def claim_re_refuted(p: "Play") -> None:
    """A claim attested, refuted, and the refutation refuted in turn."""
    say = p.say
    made = say("alice", "assert", "The p99 latency regression in 2.3 comes from the new JSON encoder.", evidence=[{"kind": "log", "ref": "bench/2.3-vs-2.2.txt", "note": "p99 41 ms against 18 ms"}])
    claim = made["claim"]
    say("bob", "attest", "Reproduced: the flame graph shows 60 % of request time in escape_str.", claim=claim, evidence=[{"kind": "url", "ref": "https://ci.example.org/runs/8812/flamegraph.svg"}])
    counter = say("carol", "refute", "Not the encoder: with the 2.2 encoder swapped into 2.3 the p99 stays at 40 ms.", claim=claim, evidence=[{"kind": "commit", "ref": "5e1f0a9c"}])
    recount = say("alice", "refute", "That swap test ran the 2.2 binary by mistake: its build log shows the old version string, so it measured nothing.", claim=counter["claim"], parent=counter["id"], evidence=[{"kind": "log", "ref": "ci/8820/build.log", "note": "version 2.2.4"}], due=True)
    say("dave", "attest", "Reran the swap with the right binary: p99 19 ms, so the encoder is the cause.", claim=recount["claim"], evidence=[{"kind": "log", "ref": "ci/8831/bench.txt"}])
    say("alice", "decide", "Decided: revert the encoder change in 2.3.1 and fix escape_str before it lands again.", thread=made["thread"])


def code_review(p: "Play") -> None:
    """A code review: three objections, each answered by a fix, then approval."""
    say = p.say
    bob = p.identity("bob")
    root = say("alice", "ask", "Review request: PR #412 adds retry with exponential backoff to the uploader. Can you review it?", to=bob)
    o1 = say("bob", "object", "The backoff has no upper bound: after 12 failures the next retry waits over an hour.", parent=root["id"], due=True)
    f1 = say("alice", "ask", "Fixed in 9c1e2d4: the delay is capped at 30 s. Does that address it?", parent=o1["id"], to=bob, due=True)
    o2 = say("bob", "object", "Capped now, but every client retries in lockstep after an outage; add jitter.", parent=f1["id"], due=True)
    f2 = say("alice", "ask", "Added full jitter in 71ab03e, with a test that seeds the random source. Good now?", parent=o2["id"], to=bob, due=True)
    o3 = say("bob", "object", "One more: it also retries 400 responses, which will never succeed.", parent=f2["id"], due=True)
    f3 = say("alice", "ask", "Right: only 429, 5xx and connection errors retry now (b20c7f1). Anything else?", parent=o3["id"], to=bob, due=True)
    ok = say("bob", "answer", "Approved: the cap, the jitter and the status filter look right.", parent=f3["id"], due=True)
    say("alice", "decide", "Merging PR #412 with the three fixes.", parent=ok["id"], due=True)


def handoff_to_owner(p: "Play") -> None:
    """A question handed off once, to the agent who can answer it."""
    root = p.say("alice", "ask", "Why does the nightly backup job exit with code 3 since Tuesday?", to=p.identity("bob"))
    moved = p.say("bob", "handoff", "Not mine: carol wrote the backup job and owns its alerts.", parent=root["id"], to=p.identity("carol"), due=True)
    answer = p.say("carol", "answer", "Exit 3 is an S3 AccessDenied: Tuesday's bucket policy change dropped PutObject for the backup role. I restored it; tonight's run should pass.", parent=moved["id"], due=True)
    p.say("alice", "decide", "Decided: the policy is restored, and carol adds a policy check to the deploy pipeline.", parent=answer["id"], due=True)


SERVICES = ["billing", "search", "auth", "uploads", "notifications", "reports", "gateway", "scheduler", "exports", "webhooks", "metrics", "mailer"]
STEPS = [
    "drained the traffic of {s} on the old cluster",
    "copied the database of {s}; {n} rows, checksums match",
    "switched the DNS of {s} to the new cluster",
    "watched {s} for 15 minutes: error rate {e} %",
    "removed the old nodes of {s}",
]
PERSON = [
    "Good progress. Hold the gateway until 15:00, the partner demo runs on it.",
    "Please post the error rate after each switch, not only at the end.",
    "Billing is the one I worry about; ping me before its DNS switch.",
    "Thanks. The status page says maintenance until 18:00, keep it in mind.",
    "The partner demo is over, the gateway is free.",
    "Someone from support asks about uploads: is it back to normal?",
    "Let us stop new switches at 17:30 and finish tomorrow if needed.",
    "Reports can wait until tomorrow; nobody reads them tonight.",
]


def long_thread(p: "Play", length: int) -> None:
    """A long working thread of four agents, a person speaking now and then, and
    agents asking each other questions on the side."""
    agents = ["alice", "bob", "carol", "dave"]
    root = p.say("ann", "ask", "Migration week: post each step you finish on the staging cluster, and flag anything that blocks you.")
    thread = root["thread"]
    steps: Dict[str, int] = {}
    k, person, gap = 1, 0, 0
    last = root
    # The person does not speak on a fixed beat: after 9, 14, 11, 17, 8 ... messages.
    gaps = [9, 14, 11, 17, 8, 13, 16, 10]
    while k < length:
        if gap >= gaps[person % len(gaps)]:
            # The person replies to the latest update (a reply to their own
            # question would be self_reply).
            remark = PERSON[person % len(PERSON)] + ("" if person < len(PERSON) else f" (day {person // len(PERSON) + 1})")
            p.say("ann", "note", remark, parent=last["id"])
            k, person, gap = k + 1, person + 1, 0
            continue
        who = agents[k % 4]
        service = SERVICES[(k // 4) % len(SERVICES)]
        if k % 7 == 0 and k + 2 < length:
            other = agents[(k + 1) % 4]
            asked = p.say(who, "ask", f"{other}, is the queue of {service} empty before I switch it? (check {k})", thread=thread, to=p.identity(other))
            last = p.say(other, "answer", f"Yes, the queue of {service} drained at 14:{k % 60:02d}; go ahead.", parent=asked["id"], due=True)
            k, gap = k + 2, gap + 2
            continue
        n = steps.get(service, 0)
        steps[service] = n + 1
        text = STEPS[n % len(STEPS)].format(s=service, n=1000 + 37 * k, e=f"0.{k % 10}")
        last = p.say(who, "note", f"{who}: {text} (round {n // len(STEPS) + 1}).", thread=thread)
        k, gap = k + 1, gap + 1


def legit(length: int) -> List[Tuple[str, Script]]:
    """The legitimate conversations; ``length``: messages of the long thread."""
    return [
        ("question answered and decided", question_decided),
        ("design debate of 20 messages", design_debate),
        ("claim attested, refuted, re-refuted", claim_re_refuted),
        ("code review with fixes", code_review),
        ("handoff to the right agent", handoff_to_owner),
        (f"long thread, a person now and then ({length})", lambda p: long_thread(p, length)),
    ]
