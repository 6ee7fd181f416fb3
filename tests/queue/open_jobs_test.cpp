// The queue's open jobs in memory against a real history: found in memory first and in the store
// after they end, requests parsed once while open, state and run links written through to the store.
#include "queue/open_jobs.hpp"

#include <gtest/gtest.h>

#include "test_support.hpp"
#include "store/history_jobs.hpp"

using baton::ErrorCode;
using baton::queue::JobRequest;
using baton::queue::OpenJobs;
using baton::queue::request_json;
using baton::store::History;
using baton::store::JobRecord;
using baton::store::JobState;

namespace {

JobRecord queued_job(int gpus) {
    JobRecord j;
    j.owner_uid = 1000;
    j.name = "train";
    j.argv = {"python3", "train.py"};
    j.cwd = "/";
    JobRequest r;
    r.want.gpus = static_cast<unsigned>(gpus);
    j.request = request_json(r);
    j.submit_ms = 1000;
    return j;
}

}  // namespace

TEST(OpenJobs, OpenJobsComeFromMemoryEndedOnesFromTheStore) {
    baton::test::TempDir d;
    auto h = History::open(d.path() + "/baton.db");
    ASSERT_TRUE(h.ok()) << h.error().message;
    OpenJobs table(&*h);
    JobRecord j = queued_job(1);
    j.id = *h->queue_jobs().add_job(j);
    table.open()[j.id] = j;
    table.waiting()[j.id] = "waits for a GPU";

    // The state moves in the store through the table; the open record is what the caller set.
    table.record_state(j.id, {JobState::queued}, JobState::held, 2000);
    EXPECT_EQ(h->queue_jobs().job(j.id)->state, JobState::held);
    EXPECT_EQ(table.find(j.id)->state, JobState::queued);  // memory first: the agent's own view

    table.link_run(j.id, 42);
    EXPECT_EQ(h->queue_jobs().job(j.id)->run_id, 42);
    EXPECT_EQ(table.open()[j.id].run_id, 42);

    table.close(j.id);
    EXPECT_TRUE(table.open().empty());
    EXPECT_TRUE(table.waiting().empty());
    EXPECT_EQ(table.find(j.id)->state, JobState::held);  // now the store's record
    EXPECT_TRUE(table.find(999).error().is(ErrorCode::not_found));
}

TEST(OpenJobs, RequestsAreParsedOnceWhileOpenAndFollowAChange) {
    OpenJobs table;
    JobRecord j = queued_job(2);
    j.id = 5;
    table.open()[j.id] = j;
    const JobRequest* first = table.request_of(j);
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(first->want.gpus, 2u);
    EXPECT_EQ(table.request_of(j), first);  // the same parse, not a new one

    j.request = queued_job(3).request;
    const JobRequest* changed = table.request_of(j);
    ASSERT_NE(changed, nullptr);
    EXPECT_EQ(changed->want.gpus, 3u);  // the text changed: parsed again

    JobRecord ended = queued_job(4);
    ended.id = 6;  // not open: parsed, not kept
    EXPECT_EQ(table.request_of(ended)->want.gpus, 4u);
    ended.request = "{not json";
    EXPECT_EQ(table.request_of(ended), nullptr);

    // Without a store (a table that never opened one) a state change is a no-op, never a crash.
    table.record_state(5, {JobState::queued}, JobState::held, 1);
    table.link_run(5, 1);
    EXPECT_EQ(table.open()[5].run_id, 1);
    EXPECT_TRUE(table.find(77).error().is(ErrorCode::not_found));
}
