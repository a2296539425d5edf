// Two modules synchronising on an action, with a global counter and a formula.
dtmc
const int M = 15;
global g : [0..M] init 0;
formula done = g=M;

module a
	xa : [0..1] init 0;
	[tick] !done -> 0.7 : (xa'=1-xa) & (g'=g+1) + 0.3 : (xa'=xa);
	[tock] done -> true;
endmodule
module b
	xb : [0..2] init 0;
	[tick] true -> 0.5 : (xb'=mod(xb+1, 3)) + 0.5 : true;
	[tock] true -> true;
endmodule

label "end" = done;
label "b0" = xb=0;
rewards "ticks" [tick] true : 1; endrewards
