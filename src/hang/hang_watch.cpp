#include "hang/hang_watch.hpp"

#include <algorithm>

namespace baton::hang {

void HangWatch::steps(std::int64_t last_step_unix_ms, double median_step_seconds) {
    last_step_ms_ = std::max(last_step_ms_, last_step_unix_ms);
    median_step_ = median_step_seconds;
}

void HangWatch::restart() {
    last_step_ms_ = verdict_step_ms_ = 0;
    looks_.clear();
    verdict_.reset();
}

double HangWatch::hang_seconds() const {
    return o_.hang_seconds > 0 ? o_.hang_seconds : std::max(60.0, 10 * median_step_);
}

bool HangWatch::quiet_for(std::int64_t unix_ms, double seconds) const {
    return static_cast<double>(unix_ms - last_step_ms_) >= seconds * 1000;
}

bool HangWatch::look_due(double now, std::int64_t unix_ms) const {
    if (last_step_ms_ == 0)  // no steps: the stacks' progress is all there is
        return looks_.empty() || now - looks_.back().at >= o_.period_seconds;
    if (verdict_ && last_step_ms_ > verdict_step_ms_) return true;  // steps again: one look clears it
    const double h = hang_seconds();
    if (!quiet_for(unix_ms, h)) return false;
    if (looks_.empty()) return true;
    // The first two looks of a quiet spell are confirm_seconds apart, the next ones a period.
    const double wait = looks_.size() == 1 ? o_.confirm_seconds : o_.period_seconds;
    return now - looks_.back().at >= wait;
}

std::optional<HangWatch::Change> HangWatch::settle(std::optional<HangVerdict> v) {
    if (!v) {
        if (!verdict_) return std::nullopt;
        verdict_.reset();
        return Change{Change::Kind::cleared, std::nullopt};
    }
    if (!verdict_) {
        verdict_ = std::move(v);
        verdict_step_ms_ = last_step_ms_;
        return Change{Change::Kind::appeared, verdict_};
    }
    if (verdict_->key == v->key) {
        const std::int64_t since = verdict_->since_unix_ms;
        const std::string summary = verdict_->summary;  // said once, with the first "since"
        verdict_ = std::move(v);
        verdict_->since_unix_ms = std::min(since, verdict_->since_unix_ms);
        verdict_->summary = summary;
        return std::nullopt;
    }
    verdict_ = std::move(v);
    return Change{Change::Kind::changed, verdict_};
}

std::optional<HangVerdict> HangWatch::judge_without_steps() const {
    const Look& newest = looks_.back();
    const double h = hang_seconds();
    // The most recent look at least hang_seconds (less a second of scheduling slack) older.
    const Look* ref = nullptr;
    for (const Look& l : looks_)
        if (newest.at - l.at >= h - 1.0) ref = &l;
    if (!ref) return verdict_;  // not watched long enough: nothing new to say
    // A rank whose stack was elsewhere at any look in between moved: it is judged against that stack.
    Look before = *ref;
    for (RankLook& b : before.ranks) {
        auto now_it = std::find_if(newest.ranks.begin(), newest.ranks.end(),
                                   [&](const RankLook& x) { return x.rank == b.rank && x.pid == b.pid; });
        if (now_it == newest.ranks.end() || !now_it->has_stacks) continue;
        for (const Look& l : looks_) {
            if (l.at < ref->at) continue;
            for (const RankLook& x : l.ranks)
                if (x.rank == b.rank && x.pid == b.pid && x.has_stacks && x.frames != now_it->frames) {
                    b.frames = x.frames;
                    b.has_stacks = true;
                }
        }
    }
    // Since when: the last progress seen of a rank that stayed put all along: the last look at which
    // it was elsewhere, or, when every look saw it where it is, the first look (it stopped before it).
    std::int64_t since = ref->unix_ms;
    bool at_first_look = false;
    for (const RankLook& now_rank : newest.ranks) {
        if (!now_rank.has_stacks) continue;
        std::int64_t from = newest.unix_ms;
        std::optional<std::int64_t> moved;
        for (auto l = looks_.rbegin(); l != looks_.rend(); ++l) {
            auto x = std::find_if(l->ranks.begin(), l->ranks.end(),
                                  [&](const RankLook& y) { return y.rank == now_rank.rank && y.pid == now_rank.pid; });
            if (x == l->ranks.end() || !x->has_stacks || x->frames != now_rank.frames) {
                if (x != l->ranks.end() && x->has_stacks) moved = l->unix_ms;
                break;
            }
            from = l->unix_ms;
        }
        if (from > ref->unix_ms) continue;  // it moved within hang_seconds: not the stuck one
        const std::int64_t last = moved.value_or(from);
        if (last < since || (last == since && !moved)) since = last, at_first_look = !moved;
    }
    return judge_hang(before, newest, since, o_.multi_node, at_first_look);
}

std::optional<HangWatch::Change> HangWatch::amend_newest(const std::function<void(Look&)>& amend) {
    if (looks_.empty()) return std::nullopt;
    amend(looks_.back());
    if (last_step_ms_ == 0) return settle(judge_without_steps());
    if (looks_.size() < 2) return std::nullopt;
    return settle(judge_hang(looks_.front(), looks_.back(), last_step_ms_, o_.multi_node));
}

std::optional<HangWatch::Change> HangWatch::add_look(Look look) {
    looks_.push_back(std::move(look));
    const Look& newest = looks_.back();
    if (last_step_ms_ == 0) {
        const double keep = hang_seconds() + 2 * o_.period_seconds;
        while (looks_.size() > 1 && newest.at - looks_.front().at > keep) looks_.pop_front();
        return settle(judge_without_steps());
    }
    // Looks from before the newest step say nothing about the quiet after it.
    while (looks_.size() > 1 && looks_.front().unix_ms < last_step_ms_) looks_.pop_front();
    if (verdict_ && last_step_ms_ > verdict_step_ms_) {
        looks_.clear();
        return settle(std::nullopt);
    }
    if (newest.unix_ms < last_step_ms_) {  // taken before a step that came meanwhile
        looks_.clear();
        return std::nullopt;
    }
    while (looks_.size() > 2) looks_.pop_front();
    if (looks_.size() < 2) return std::nullopt;  // the first look of a quiet spell: the second confirms
    return settle(judge_hang(looks_.front(), looks_.back(), last_step_ms_, o_.multi_node));
}

}  // namespace baton::hang
