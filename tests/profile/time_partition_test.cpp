// Overlapping spans cut into one partition, the lowest label winning, gaps kept as label -1.
#include "profile/time_partition.hpp"

#include <gtest/gtest.h>

using baton::profile::add_clipped;
using baton::profile::partition;
using baton::profile::Piece;
using baton::profile::Span;

TEST(TimePartition, TheLowestLabelWinsAndGapsAreKept) {
    const std::vector<Piece> p = partition({{0, 10, 1}, {5, 15, 0}, {12, 14, 2}, {30, 40, 1}}, 0, 35);
    ASSERT_EQ(p.size(), 4u);
    EXPECT_EQ(p[0].label, 1);
    EXPECT_DOUBLE_EQ(p[0].end, 5);
    EXPECT_EQ(p[1].label, 0) << "label 0 wins over 1 and 2 while it runs";
    EXPECT_DOUBLE_EQ(p[1].start, 5);
    EXPECT_DOUBLE_EQ(p[1].end, 15);
    EXPECT_EQ(p[2].label, -1);
    EXPECT_DOUBLE_EQ(p[2].end, 30);
    EXPECT_EQ(p[3].label, 1);
    EXPECT_DOUBLE_EQ(p[3].end, 35) << "clipped to the range";
}

TEST(TimePartition, AdjacentPiecesOfOneLabelMergeAndEmptySpansAreNothing) {
    const std::vector<Piece> p = partition({{0, 5, 0}, {5, 9, 0}, {7, 7, 1}, {9, 3, 1}, {2, 4, -1}}, 0, 9);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].label, 0);
    EXPECT_TRUE(partition({{0, 5, 0}}, 5, 5).empty()) << "an empty range";
    const std::vector<Piece> gap = partition({}, 0, 3);
    ASSERT_EQ(gap.size(), 1u);
    EXPECT_EQ(gap[0].label, -1);
}

TEST(TimePartition, ClippedSumsPerLabel) {
    const std::vector<Piece> p = partition({{0, 10, 0}, {10, 20, 1}, {25, 30, 0}}, 0, 30);
    std::vector<double> by(2, 0.0);
    add_clipped(p, 5, 27, by);
    EXPECT_DOUBLE_EQ(by[0], 5 + 2);
    EXPECT_DOUBLE_EQ(by[1], 10);
}
