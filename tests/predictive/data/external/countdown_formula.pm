// A countdown with a formula in the guard, arithmetic in guards and a ?: probability.
dtmc
const int T = 25;
formula half = t*2 <= T;
module timer
	t : [0..T] init T;
	z : bool init false;
	[] t>0 & !z -> (half ? 0.2 : 0.05) : (z'=true) + 1-(half ? 0.2 : 0.05) : (t'=t-1);
	[] t=0 | z -> true;
endmodule
label "alarm" = z;
label "timeout" = t=0 & !z;
rewards "time" t>0 & !z : 1; endrewards
