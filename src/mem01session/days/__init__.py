"""Days in what people say: the days a question names, and the dates a statement states.

* :mod:`.named`: the days a question names ("in June", "last week", "on Monday", "over
  the summer", "at Christmas", "since October 13"), in the user's time zone, as a span
  recall reads the episodes said in;
* :mod:`.occasions`: seasons (the hemisphere from the zone) and holidays;
* :mod:`.zones`: where a time zone is (its country), from the zone tables;
* :mod:`.stated`: easy stated dates in a clause ("last weekend", "in 2021"), which the rule
  extractor gives a fact as its start.

Pure functions of text and time: nothing here reads the database or imports the engine.
"""
