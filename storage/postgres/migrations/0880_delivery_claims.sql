-- An attempt of a delivery is claimed: claim is the attempt's token and
-- claim_until the end of its lease, which the process that sends renews
-- while the attempt is under way. A delivery that is 'sending' can be
-- claimed again only once its lease has ended (the process that claimed
-- it died, or gave it back), so that two copies of one task message, or
-- two processes, never send one delivery at once.
ALTER TABLE file_destinations
    ADD COLUMN claim       BIGINT,
    ADD COLUMN claim_until TIMESTAMPTZ;
